package relayseed_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/relay/relayseed"
	"github.com/headroom-dev/headroom/examples/relay/schema"
	"github.com/headroom-dev/headroom/fixtures/localpg"
	"github.com/headroom-dev/headroom/seed"
)

// benchUsageRows is the size of the usage table the loader is measured on.
const benchUsageRows = 1_000_000

// benchSpec is the published population's shape with a 1,000,000-row usage
// table.
func benchSpec() relayseed.Spec {
	s := relayseed.Published
	s.UsageRows, s.EventsRows, s.Secret = benchUsageRows, 0, testSecret
	return s
}

// writeCopyText writes the rows of t in COPY's text format to path.
func writeCopyText(tb testing.TB, t relayseed.Table, path string) {
	tb.Helper()
	f, err := os.Create(path)
	require.NoError(tb, err)
	w := bufio.NewWriterSize(f, 1<<20)
	var line []byte
	require.NoError(tb, t.Rows(func(row []any) bool {
		line = line[:0]
		for i, v := range row {
			if i > 0 {
				line = append(line, '\t')
			}
			switch x := v.(type) {
			case int64:
				line = strconv.AppendInt(line, x, 10)
			case string:
				require.False(tb, strings.ContainsAny(x, "\t\n\\"), "value %q needs escaping", x)
				line = append(line, x...)
			case time.Time:
				line = x.UTC().AppendFormat(line, "2006-01-02 15:04:05.999999-07")
			default:
				tb.Fatalf("unexpected %T", v)
			}
		}
		line = append(line, '\n')
		_, err := w.Write(line)
		return err == nil
	}))
	require.NoError(tb, w.Flush())
	require.NoError(tb, f.Close())
}

// BenchmarkUsageLoad loads the same 1,000,000 usage rows into PostgreSQL
// through seed.Copy (rows generated on the fly) and through psql's COPY …
// FROM STDIN (rows generated beforehand into a file; only psql is timed),
// alternately, and reports both rates and their ratio.
//
//	flock /tmp/headroom-heavy.lock go test -run XXX -bench UsageLoad -benchtime 3x ./seed/
func BenchmarkUsageLoad(b *testing.B) {
	bin, err := localpg.BinDir()
	if err != nil {
		b.Skip(err)
	}
	psql := filepath.Join(bin, "psql")
	ctx := context.Background()
	url := postgresURL(b)
	conn, err := pgx.Connect(ctx, url)
	require.NoError(b, err)
	defer conn.Close(ctx)
	for _, q := range migrations(schema.Postgres) {
		_, err := conn.Exec(ctx, q)
		require.NoError(b, err)
	}
	pop, err := benchSpec().Population()
	require.NoError(b, err)
	usage := pop.Tables(schema.Postgres)[3]
	require.Equal(b, "usage", usage.Name)
	file := filepath.Join(b.TempDir(), "usage.txt")
	writeCopyText(b, usage, file)
	copySQL := "COPY usage (" + strings.Join(usage.Columns, ", ") + ") FROM STDIN"

	reset := func() {
		_, err := conn.Exec(ctx, "TRUNCATE usage RESTART IDENTITY")
		require.NoError(b, err)
		_, err = conn.Exec(ctx, "CHECKPOINT")
		require.NoError(b, err)
	}
	check := func(who string) {
		var n int64
		require.NoError(b, conn.QueryRow(ctx, "SELECT count(*) FROM usage").Scan(&n))
		require.Equal(b, int64(benchUsageRows), n, who)
	}
	loadSeed := func() time.Duration {
		reset()
		start := time.Now()
		n, err := seed.Copy(ctx, seed.Postgres(conn), usage.Name, usage.Columns, usage.Rows)
		el := time.Since(start)
		require.NoError(b, err)
		require.Equal(b, int64(benchUsageRows), n)
		check("seed")
		return el
	}
	loadPsql := func() time.Duration {
		reset()
		f, err := os.Open(file)
		require.NoError(b, err)
		defer f.Close()
		cmd := exec.Command(psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", copySQL)
		cmd.Stdin = f
		start := time.Now()
		out, err := cmd.CombinedOutput()
		el := time.Since(start)
		require.NoError(b, err, "%s", out)
		check("psql")
		return el
	}

	var seedTime, psqlTime time.Duration
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 0 {
			seedTime += loadSeed()
			psqlTime += loadPsql()
		} else {
			psqlTime += loadPsql()
			seedTime += loadSeed()
		}
	}
	b.StopTimer()
	rows := float64(benchUsageRows * b.N)
	seedRate, psqlRate := rows/seedTime.Seconds(), rows/psqlTime.Seconds()
	b.ReportMetric(seedRate, "seed-rows/s")
	b.ReportMetric(psqlRate, "psql-rows/s")
	b.ReportMetric(seedRate/psqlRate, "seed/psql")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkGenerateUsage measures the generator alone: 1,000,000 usage rows
// drawn and discarded.
func BenchmarkGenerateUsage(b *testing.B) {
	pop, err := benchSpec().Population()
	require.NoError(b, err)
	usage := pop.Tables(schema.Postgres)[3]
	b.ResetTimer()
	for range b.N {
		n := 0
		require.NoError(b, usage.Rows(func([]any) bool { n++; return true }))
		require.Equal(b, benchUsageRows, n)
	}
	b.ReportMetric(float64(benchUsageRows*b.N)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkApplyPresets seeds the Published population (10,000 users,
// 500,000 usage rows, 50,000 events) and the Helpdesk one (3,000 users,
// 200,000 usage rows, 1,000,000 events) into a fresh database per
// iteration.
//
//	flock /tmp/headroom-heavy.lock go test -run XXX -bench ApplyPresets -benchtime 2x ./seed/
func BenchmarkApplyPresets(b *testing.B) {
	for _, p := range []struct {
		name string
		spec relayseed.Spec
	}{{"Published", relayseed.Published}, {"Helpdesk", relayseed.Helpdesk}} {
		spec := p.spec
		spec.Secret = testSecret
		for _, d := range []string{"postgres", "sqlite"} {
			b.Run("preset="+p.name+"/dialect="+d, func(b *testing.B) {
				var total time.Duration
				for range b.N {
					b.StopTimer()
					var target seed.DB
					if d == "postgres" {
						_, target = newPostgres(b, true)
					} else {
						_, target, _ = newSQLite(b, true)
					}
					b.StartTimer()
					start := time.Now()
					pop, err := relayseed.Apply(context.Background(), target, spec)
					total += time.Since(start)
					require.NoError(b, err)
					require.True(b, pop.Applied)
				}
				b.ReportMetric(total.Seconds()/float64(b.N), "s/apply")
				b.ReportMetric(float64(spec.UsageRows+spec.EventsRows)*float64(b.N)/total.Seconds(), "history-rows/s")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

// BenchmarkSQLiteBatchRows compares rows per INSERT statement on SQLite for
// 200,000 usage rows.
//
//	flock /tmp/headroom-heavy.lock go test -run XXX -bench SQLiteBatchRows -benchtime 2x ./seed/
func BenchmarkSQLiteBatchRows(b *testing.B) {
	spec := benchSpec()
	spec.UsageRows = 200_000
	pop, err := spec.Population()
	require.NoError(b, err)
	usage := pop.Tables(schema.SQLite)[3]
	for _, batch := range []int{1, 16, 64, 256, 1024, 4096} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			var total time.Duration
			for range b.N {
				b.StopTimer()
				_, target, _ := newSQLite(b, true)
				b.StartTimer()
				start := time.Now()
				_, err := seed.Copy(context.Background(), target, usage.Name, usage.Columns, usage.Rows, seed.WithBatchRows(batch))
				total += time.Since(start)
				require.NoError(b, err)
			}
			b.ReportMetric(float64(usage.Len)*float64(b.N)/total.Seconds(), "rows/s")
		})
	}
}
