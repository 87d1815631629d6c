package report

import "html/template"

// style is the pages' stylesheet, inlined: the pages load nothing.
const style = `
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Liberation Sans",sans-serif;margin:0;color:#1d1d1f;background:#fafafa}
main{max-width:1200px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:22px;margin:8px 0 4px;word-break:break-all}
h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:15px;margin:16px 0 6px}
pre{background:#f0f0f0;padding:8px 10px;border-radius:4px;overflow-x:auto;white-space:pre-wrap;word-break:break-all}
code{font-family:ui-monospace,"Liberation Mono",monospace;font-size:13px}
table{border-collapse:collapse;margin:6px 0 12px;background:#fff}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f3f3f3;font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.verdict{display:inline-block;padding:2px 10px;border-radius:4px;font-weight:700;text-transform:uppercase;color:#fff}
.verdict.pass{background:#2c7a2c}.verdict.fail{background:#c62828}.verdict.invalid{background:#e08a00}.verdict.incomplete{background:#777}
td.pass{color:#1e6b1e}td.fail,tr.fail td{color:#b71c1c}td.invalid,tr.invalid td{color:#a05a00}td.incomplete{color:#666}
.headline{font-size:16px;margin:6px 0}
.note{color:#555;font-style:italic}
.errs li{color:#b71c1c}
figure{margin:10px 0 18px;background:#fff;border:1px solid #e3e3e3;border-radius:4px;padding:6px}
figure svg{display:block;max-width:100%;height:auto}
figcaption{font-size:12px;color:#555}
.meta td:first-child,.env td:first-child{font-weight:600;white-space:nowrap}
nav a{margin-right:12px}
`

// loadScript marks the page once loaded: data-plots on <body> is the
// number of plots (SVG) the browser laid out with a non-zero size, for
// tests (and curious readers) to check that the plots rendered.
const loadScript = `window.addEventListener("load",function(){var n=0;document.querySelectorAll("figure svg").forEach(function(s){var r=s.getBoundingClientRect();if(r.width>0&&r.height>0){n++}});document.body.setAttribute("data-plots",String(n))});`

var funcs = template.FuncMap{
	"style":  func() template.CSS { return template.CSS(style) },
	"script": func() template.JS { return template.JS(loadScript) },
}

var pageTmpl = template.Must(template.New("page").Funcs(funcs).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} — {{.Verdict}}</title>
<style>{{style}}</style>
<script>{{script}}</script>
</head>
<body data-plots="0" data-figures="{{len .Figures}}" data-verdict="{{.Verdict}}">
<main>
<nav><a href="#capacity">Capacity</a><a href="#plots">Plots</a><a href="#kinds">Per kind</a>{{if .Queries}}<a href="#queries">Queries</a>{{end}}{{if .Faults}}<a href="#faults">Faults</a>{{end}}<a href="#checks">Checks</a><a href="#self">Self-check</a>{{if .Findings}}<a href="#findings">Findings</a>{{end}}{{if .Baseline}}<a href="#baseline">Baseline</a>{{end}}<a href="#environment">Environment</a>{{if .Logs}}<a href="#logs">Logs</a>{{end}}</nav>
<h1>{{.Title}}</h1>
<p class="headline"><span class="verdict {{.VClass}}" id="verdict">{{.Verdict}}</span> {{.Headline}}.</p>
{{with .Conclusion}}<p>{{.}}</p>{{end}}
{{with .Ceiling}}<p>{{.}}</p>{{end}}
<pre><code id="command">{{.Command}}</code></pre>
<table class="meta"><tbody>{{range .Meta}}<tr><td>{{.K}}</td><td>{{.V}}</td></tr>{{end}}</tbody></table>
{{if .Errs}}<h3>Why it did not pass</h3><ul class="errs">{{range .Errs}}<li>{{.}}</li>{{end}}</ul>{{end}}

<h2 id="capacity">Capacity</h2>
{{if .Steps}}
<table>
<thead><tr><th>Step</th><th>Level ({{.Unit}})</th><th>Offered/s</th><th>Answered/s</th><th>OK/s</th><th>p50</th><th>p95</th><th>p99</th><th>Errors</th>{{range .Components}}<th>{{.}} CPU / memory</th>{{end}}<th>Result</th><th>Profiles</th></tr></thead>
<tbody>
{{range .Steps}}<tr><td class="num">{{.Index}}</td><td class="num">{{.Level}}</td><td class="num">{{.Offered}}</td><td class="num">{{.Achieved}}</td><td class="num">{{.OK}}</td><td class="num">{{.P50}}</td><td class="num">{{.P95}}</td><td class="num">{{.P99}}</td><td class="num">{{.Errors}}</td>{{range .Res}}<td class="num">{{.}}</td>{{end}}<td class="{{.Class}}"><b>{{.Verdict}}</b>{{with .Outcome}} — {{.}}{{end}}</td><td>{{range .Profiles}}<a href="{{.Href}}">{{.Text}}</a> {{end}}</td></tr>
{{end}}</tbody>
</table>
{{with .Primary}}<p class="note">Latency columns are of <code>{{.}}</code>, the primary request kind, measured from the intended send time; errors are every outcome but ok, over the request kinds.</p>{{end}}
{{else}}<p class="note">No step has been measured yet.</p>{{end}}

<h2 id="plots">Plots</h2>
{{range .Figures}}<figure id="fig-{{.Name}}">{{if .Err}}<p class="note">{{.Title}}: {{.Err}}</p>{{else}}{{.SVG}}{{end}}<figcaption>{{.Name}}</figcaption></figure>
{{end}}
{{range .Notes}}<p class="note">Not drawn — {{.}}.</p>
{{end}}

<h2 id="kinds">Per kind and step</h2>
{{if .Kinds}}
<table>
<thead><tr><th>Step</th><th>Level</th><th>Kind</th><th>Requests</th><th>OK/s</th><th>p50</th><th>p90</th><th>p95</th><th>p99</th><th>p99.9</th><th>Max</th><th>Mean</th><th>Outcomes</th><th>Error samples</th></tr></thead>
<tbody>
{{range .Kinds}}<tr><td class="num">{{.Step}}</td><td class="num">{{.Level}}</td><td>{{.Kind}}{{if .Observed}} <i>(observed)</i>{{end}}</td><td class="num">{{.Requests}}</td><td class="num">{{.OKps}}</td><td class="num">{{.P50}}</td><td class="num">{{.P90}}</td><td class="num">{{.P95}}</td><td class="num">{{.P99}}</td><td class="num">{{.P999}}</td><td class="num">{{.Max}}</td><td class="num">{{.Mean}}</td><td>{{.Outcomes}}</td><td>{{range .Errors}}<div><code>{{.}}</code></div>{{end}}</td></tr>
{{end}}</tbody>
</table>
{{else}}<p class="note">No request measured yet.</p>{{end}}
{{if .Queries}}
<h2 id="queries">Queries</h2>
<p>What the database ran during each hold (pg_stat_statements), every request kind together; database time is the server's execution time, without round trips.</p>
<table>
<thead><tr><th>Step</th><th>Level</th><th>Statements/s</th><th>Per OK request</th><th>Database time/s</th><th>Distinct</th></tr></thead>
<tbody>
{{range .Queries}}<tr><td class="num">{{.Step}}</td><td class="num">{{.Level}}</td><td class="num">{{.PerS}}</td><td class="num">{{.PerOK}}</td><td class="num">{{.DBTime}}</td><td class="num">{{.Distinct}}</td></tr>
{{end}}</tbody>
</table>
{{if .Statements}}<p>The busiest statements of step {{.TopStep}}, by database time:</p>
<table>
<thead><tr><th>Statement</th><th>Calls/s</th><th>Per OK request</th><th>Mean</th><th>Database time/s</th><th>Rows/call</th></tr></thead>
<tbody>
{{range .Statements}}<tr><td><code>{{.Query}}</code></td><td class="num">{{.PerS}}</td><td class="num">{{.PerOK}}</td><td class="num">{{.Mean}}</td><td class="num">{{.DBTime}}</td><td class="num">{{.Rows}}</td></tr>
{{end}}</tbody>
</table>{{end}}
{{end}}
{{if .Faults}}
<h2 id="faults">Faults</h2>
<table>
<thead><tr><th>Step</th><th>Fault</th><th>At</th><th>For</th><th>Seen</th><th>Recovered</th><th>Failed meanwhile</th></tr></thead>
<tbody>
{{range .Faults}}<tr{{with .Class}} class="{{.}}"{{end}}><td class="num">{{.Step}}</td><td>{{.Name}}</td><td class="num">{{.At}}</td><td class="num">{{.For}}</td><td>{{.Seen}}</td><td>{{.Recovered}}</td><td>{{.Failed}}</td></tr>
{{end}}</tbody>
</table>
<p>{{.FaultLegend}}</p>
{{end}}

<h2 id="checks">Checks</h2>
{{if .Checks}}
<table>
<thead><tr><th>Check</th>{{range .StepHeads}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{range .Checks}}<tr><td><code>{{.Check}}</code></td>{{range .Cells}}<td class="{{.Class}}">{{.Text}}</td>{{end}}</tr>
{{end}}</tbody>
</table>
{{else}}<p class="note">The scenario has no checks.</p>{{end}}

<h2 id="self">Generator self-check</h2>
{{if .Self}}
<table>
<thead><tr><th>Step</th><th>Level</th><th>Schedule lag p99</th><th>CPU</th><th>Dropped</th><th>Unfinished</th><th>Queued p99 / max</th><th>Memory</th><th>Files</th><th>Invalid because</th><th>Near a limit</th></tr></thead>
<tbody>
{{range .Self}}<tr><td class="num">{{.Step}}</td><td class="num">{{.Level}}</td><td class="num">{{.Lag}}</td><td class="num">{{.CPU}}</td><td class="num">{{.Dropped}}</td><td class="num">{{.Unfinished}}</td><td class="num">{{.Queued}}</td><td class="num">{{.Mem}}</td><td class="num">{{.Files}}</td><td class="invalid">{{range .Reasons}}<div>{{.}}</div>{{end}}</td><td>{{range .Saturated}}<div>{{.}}</div>{{end}}</td></tr>
{{end}}</tbody>
</table>
{{else}}<p class="note">No step yet.</p>{{end}}

{{if .Findings}}<h2 id="findings">Findings</h2>
<ul>{{range .Findings}}<li>{{.}}</li>{{end}}</ul>{{end}}

{{if .Baseline}}<h2 id="baseline">Baseline</h2>
<ul>{{range .Baseline}}<li>{{.}}</li>{{end}}</ul>{{end}}

<h2 id="environment">Environment</h2>
<table class="env"><tbody>{{range .Env}}{{if .V}}<tr><td>{{.K}}</td><td>{{.V}}</td></tr>{{end}}{{end}}</tbody></table>
{{if .Components2}}<h3>Components</h3>
<table><thead><tr><th>Name</th><th>Role</th><th>Version</th><th>Image</th><th>Digest</th><th>Replicas</th></tr></thead><tbody>
{{range .Components2}}<tr><td>{{.Name}}</td><td>{{.Role}}</td><td>{{.Version}}</td><td>{{.Image}}</td><td><code>{{.Digest}}</code></td><td class="num">{{.Replicas}}</td></tr>{{end}}
</tbody></table>{{end}}
{{if .Params}}<h3>Parameters</h3>
<table class="env"><tbody>{{range .Params}}<tr><td>{{.K}}</td><td>{{.V}}</td></tr>{{end}}</tbody></table>{{end}}
{{if .Knobs}}<h3>Knobs from the environment</h3>
<table class="env"><tbody>{{range .Knobs}}<tr><td>{{.K}}</td><td><code>{{.V}}</code></td></tr>{{end}}</tbody></table>{{end}}
{{with .Args}}<h3>Test binary's command line</h3><pre><code>{{.}}</code></pre>{{end}}

{{if .Logs}}<h2 id="logs">Component logs</h2>
<p>In <code>{{.LogDir}}/</code> beside this report:</p>
<ul>{{range .Logs}}<li><a href="{{.Href}}">{{.Text}}</a></li>{{end}}</ul>{{end}}

<p class="note">Written by Headroom at {{.Generated}}.</p>
</main>
</body>
</html>
`))
