package scenarios

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// exampleBlock is a README block that copies a function of a real test:
// <!-- example: FILE FUNC --> followed by a Go code block.
var exampleBlock = regexp.MustCompile("(?s)<!-- example: (\\S+) (\\S+) -->\n```go\n(.*?)```")

// The README's examples are copies of code that compiles and runs: each
// marked block must equal its function in its file, so the README cannot
// drift from the tests.
func TestREADMEExamplesAreRealCode(t *testing.T) {
	root := filepath.Join("..", "..")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	blocks := exampleBlock.FindAllStringSubmatch(string(readme), -1)
	require.NotEmpty(t, blocks, "the README shows at least one example")
	for _, b := range blocks {
		file, fn, shown := b[1], b[2], b[3]
		src, err := os.ReadFile(filepath.Join(root, file))
		require.NoError(t, err, "the README's example names %s", file)
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, file, src, parser.SkipObjectResolution)
		require.NoError(t, err)
		var code string
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == fn {
				code = string(src[fset.Position(fd.Pos()).Offset:fset.Position(fd.End()).Offset]) + "\n"
			}
		}
		require.NotEmpty(t, code, "%s has no function %s", file, fn)
		assert.Equal(t, code, shown, "the README's copy of %s in %s has drifted: copy the function again", fn, file)
	}
}
