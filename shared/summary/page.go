package summary

import (
	"fmt"
	"html/template"
	"io"

	"github.com/icekeeper/icekeeper/shared/healthpage"
)

// Render writes s as one self-contained HTML page (no script, stylesheet
// or image loaded from anywhere), styled as the health page is (package
// healthpage), so it opens from an S3 object, a file or an e-mail alike.
func Render(w io.Writer, s Summary) error {
	return pageTemplate.Execute(w, map[string]any{"S": s, "Style": healthpage.Style})
}

var pageTemplate = template.Must(template.New("summary").Funcs(healthpage.Funcs()).Funcs(template.FuncMap{
	"usd":   func(f float64) string { return fmt.Sprintf("$%.4f", f) },
	"day":   func(t interface{ Format(string) string }) string { return t.Format("2006-01-02") },
	"int64": func(f float64) int64 { return int64(f) },
	"deref": func(f *float64) float64 { return *f },
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>icekeeper {{.S.Deployment}}: week {{.S.Week}}</title>
<style>{{.Style}}</style></head><body>
<h1>icekeeper weekly summary · {{.S.Week}}</h1>
<div class="muted">{{.S.Deployment}} · {{day .S.From}} to {{day .S.To}} (UTC, end excluded) · generated {{.S.GeneratedAt.Format "2006-01-02 15:04 MST"}} · {{.S.ID}}</div>

<h2>Totals</h2>
<div class="grid" id="totals">
<div class="card"><table>
<tr><td>tables</td><td>{{.S.Totals.Tables}} ({{.S.Totals.Maintained}} maintained)</td></tr>
<tr><td>jobs</td><td>{{.S.Totals.Jobs}}: {{.S.Totals.Committed}} committed, {{.S.Totals.Failed}} failed, {{.S.Totals.Aborted}} aborted</td></tr>
<tr><td>estimated cost</td><td>{{usd .S.Totals.CostUSD}}</td></tr>
<tr><td>saved the queries (ledger)</td><td>{{usd .S.Totals.SavedUSD}}</td></tr>
</table></div>
<div class="card"><table>
<tr><td>data files removed by rewrites</td><td>{{.S.Totals.FilesRemoved}}</td></tr>
<tr><td>snapshots expired</td><td>{{.S.Totals.SnapshotsExpired}}</td></tr>
<tr><td>storage freed</td><td>{{bytes .S.Totals.BytesFreed}}</td></tr>
<tr><td>orphans removed</td><td>{{.S.Totals.OrphansRemoved}}</td></tr>
</table></div>
<div class="card"><table>
<tr><td>tables backed off</td><td>{{.S.Totals.BackedOff}}</td></tr>
<tr><td>layout verdicts</td><td>{{.S.Totals.LayoutVerdicts}}</td></tr>
<tr><td>partition proposals pending a human</td><td>{{.S.Totals.ProposalsPending}}</td></tr>
</table></div>
</div>

<h2>Actions per table</h2>
{{if .S.Tables}}<table id="actions"><tr><th>table</th><th>action</th><th>jobs</th><th>committed</th><th>failed</th><th>aborted</th><th>files in → out</th><th>snapshots expired</th><th>freed</th><th>cost</th></tr>
{{range $t := .S.Tables}}{{range .Actions}}<tr><td>{{$t.Table}}</td><td>{{.Kind}}</td><td>{{.Jobs}}</td><td>{{.Committed}}</td><td>{{.Failed}}</td><td>{{.Aborted}}</td><td>{{if .FilesIn}}{{.FilesIn}} → {{.FilesOut}}{{end}}</td><td>{{if .SnapshotsExpired}}{{.SnapshotsExpired}}{{end}}</td><td>{{if .BytesFreed}}{{bytes .BytesFreed}}{{end}}</td><td>{{usd .CostUSD}}</td></tr>
{{if .LastFailure}}<tr><td></td><td colspan="9" class="muted">last failure: {{.LastFailure}}</td></tr>{{end}}
{{end}}{{if not .Actions}}<tr><td>{{$t.Table}}</td><td colspan="9" class="muted">no job this week{{if .Score}} · health score {{printf "%.0f" (deref .Score)}}{{end}}</td></tr>
{{end}}{{end}}</table>{{else}}<p>No table is granted and opted in.</p>{{end}}

<h2>Measured improvement (ledger)</h2>
<p class="muted">What the week's compactions and delete-file rewrites cost against what they saved the tables' queries over the 7 days after each (a lower bound until those days have passed).</p>
<table id="ledger"><tr><th>table</th><th>cost</th><th>saved</th><th>net</th><th>bytes not scanned</th><th>queries weighed</th><th>complete</th></tr>
{{range $t := .S.Tables}}{{with $t.Improvement}}<tr><td>{{$t.Table}}</td><td>{{usd .CostUSD}}</td><td>{{usd .SavedUSD}}</td><td>{{usd .NetUSD}}</td><td>{{bytes (int64 .SavedBytes)}}</td><td>{{.Queries}}</td><td>{{if .Complete}}yes{{else}}not yet{{end}}</td></tr>
<tr><td></td><td colspan="6" class="muted">{{.Verdict}}</td></tr>
{{end}}{{end}}</table>

<h2>Backed off</h2>
<ul id="backed-off">{{range $t := .S.Tables}}{{range .BackedOff}}<li><b>{{$t.Table}}</b> ({{.Cause}}, until {{.Until.Format "2006-01-02 15:04 MST"}}): {{.Reason}}</li>{{end}}{{end}}</ul>
{{if not .S.Totals.BackedOff}}<p>No table is backed off.</p>{{end}}

<h2>Layout verdicts</h2>
<ul id="layout-verdicts">{{range $t := .S.Tables}}{{with $t.LayoutTrial}}<li><b>{{$t.Table}}</b>: {{.Decision}} ({{.Trial}}): {{.Why}}</li>{{end}}{{end}}</ul>
{{if not .S.Totals.LayoutVerdicts}}<p>No layout on trial.</p>{{end}}

<h2>Partition proposals pending a human</h2>
<p class="muted">Proposed from the query signals and the files, never applied: run the SQL yourself if you agree.</p>
<ul id="proposals">{{range $t := .S.Tables}}{{range .Proposals}}<li><b>{{$t.Table}}</b>: {{.Change}} · <code>{{.SQL}}</code> · {{.Why}} ({{.Effect}})</li>{{end}}{{end}}</ul>
{{if not .S.Totals.ProposalsPending}}<p>None.</p>{{end}}
</body></html>
`))
