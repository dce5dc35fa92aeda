// Package healthpage renders a table's health as one self-contained HTML
// page: the health report (package health) with pictures of it. The page
// loads nothing (no script, stylesheet, font or image from anywhere): the
// charts are inline SVG drawn here, so it opens from a file, an e-mail or
// an S3 object alike.
//
// What it shows: the score and its parts, the recommendations, a file-size
// histogram per partition, deletes per partition, the table's data and
// delete files over its snapshots (icekeeper's compactions marked), its
// manifests, and, once icekeeper compacted the table, the totals before and
// after its last compaction (from the snapshot summaries).
package healthpage

import (
	"fmt"
	"html/template"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/health"
	"github.com/icekeeper/icekeeper/shared/messages"
)

// Colours of the charts, one set per chart (also what a test looks for in
// a screenshot).
const (
	// File-size histograms.
	ColourData = "#4c78a8"
	// Deletes per partition.
	ColourPosition = "#e45756"
	ColourDV       = "#f58518"
	ColourEquality = "#54a24b"
	// Snapshots over time.
	ColourDataLine   = "#17becf"
	ColourDeleteLine = "#9d755d"
	ColourCompacted  = "#b279a2"
	// Manifests.
	ColourDataManifests   = "#9ecae9"
	ColourDeleteManifests = "#ff9da6"
)

// maxPartitions bounds the partitions drawn; the page says how many more.
const maxPartitions = 48

// Page is what the page shows.
type Page struct {
	Report health.Report
	// Snapshots are the current snapshot and its ancestors, oldest first.
	Snapshots []SnapshotPoint
	// Compaction is icekeeper's last compaction on that line, if any.
	Compaction *BeforeAfter
}

// SnapshotPoint is one snapshot's totals, from its summary.
type SnapshotPoint struct {
	ID        int64
	At        time.Time
	Operation string
	Totals    Totals
	// JobID is set on icekeeper's compactions.
	JobID string
}

// Totals are a snapshot summary's running totals (Iceberg spec, "Snapshot
// summary": total-data-files, total-delete-files, total-records,
// total-files-size, total-position-deletes, total-equality-deletes).
type Totals struct {
	DataFiles, DeleteFiles, Records, FilesSize, PositionDeletes, EqualityDeletes int64
}

// BeforeAfter compares a compaction's snapshot with its parent.
type BeforeAfter struct {
	JobID         string
	SnapshotID    int64
	At            time.Time
	Before, After Totals
}

// New gathers the page of report from the table's metadata.
func New(report health.Report, meta table.Metadata) Page {
	p := Page{Report: report}
	byID := map[int64]table.Snapshot{}
	for _, s := range meta.Snapshots() {
		byID[s.SnapshotID] = s
	}
	cur := meta.CurrentSnapshot()
	for s := cur; s != nil; {
		p.Snapshots = append(p.Snapshots, point(*s))
		if s.ParentSnapshotID == nil {
			break
		}
		parent, ok := byID[*s.ParentSnapshotID]
		if !ok {
			break // expired
		}
		s = &parent
	}
	for i, j := 0, len(p.Snapshots)-1; i < j; i, j = i+1, j-1 {
		p.Snapshots[i], p.Snapshots[j] = p.Snapshots[j], p.Snapshots[i]
	}
	for i := len(p.Snapshots) - 1; i > 0; i-- {
		if s := p.Snapshots[i]; s.JobID != "" {
			p.Compaction = &BeforeAfter{JobID: s.JobID, SnapshotID: s.ID, At: s.At, Before: p.Snapshots[i-1].Totals, After: s.Totals}
			break
		}
	}
	return p
}

func point(s table.Snapshot) SnapshotPoint {
	pt := SnapshotPoint{ID: s.SnapshotID, At: time.UnixMilli(s.TimestampMs).UTC()}
	if s.Summary == nil {
		return pt
	}
	pt.Operation = string(s.Summary.Operation)
	props := s.Summary.Properties
	n := func(k string) int64 {
		v, _ := strconv.ParseInt(props[k], 10, 64)
		return v
	}
	pt.Totals = Totals{DataFiles: n("total-data-files"), DeleteFiles: n("total-delete-files"), Records: n("total-records"),
		FilesSize: n("total-files-size"), PositionDeletes: n("total-position-deletes"), EqualityDeletes: n("total-equality-deletes")}
	pt.JobID = props[messages.SummaryJobID]
	return pt
}

// Render writes the page as HTML.
func Render(w io.Writer, p Page) error {
	parts := append([]health.PartitionHealth(nil), p.Report.Partitions...)
	// The partitions with the most files first.
	sort.SliceStable(parts, func(i, j int) bool {
		return parts[i].DataFiles+parts[i].DeleteFiles > parts[j].DataFiles+parts[j].DeleteFiles
	})
	more := 0
	if len(parts) > maxPartitions {
		more, parts = len(parts)-maxPartitions, parts[:maxPartitions]
	}
	var hist []template.HTML
	for _, part := range parts {
		hist = append(hist, histogram(part, p.Report.Thresholds.TargetFileSize))
	}
	data := map[string]any{
		"R":          p.Report,
		"Style":      Style,
		"Generated":  p.Report.GeneratedAt.UTC().Format(time.RFC3339),
		"Histograms": hist,
		"More":       more,
		"Deletes":    deletesChart(parts),
		"History":    historyChart(p.Snapshots),
		"Manifests":  manifestsChart(p.Report),
		"Compaction": p.Compaction,
		"Snapshots":  len(p.Snapshots),
		"Colours": map[string]string{"Position": ColourPosition, "DV": ColourDV, "Equality": ColourEquality,
			"DataLine": ColourDataLine, "DeleteLine": ColourDeleteLine, "Compacted": ColourCompacted},
	}
	return pageTemplate.Execute(w, data)
}

// Style is the pages' stylesheet, inline in each page (the weekly
// summary's page, package summary, shares it).
const Style template.CSS = `body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1100px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}
.muted{color:#666}.grid{display:flex;flex-wrap:wrap;gap:12px}
.card{border:1px solid #ddd;border-radius:6px;padding:8px 10px}
table{border-collapse:collapse}td,th{padding:3px 10px;text-align:right;border-bottom:1px solid #eee}
td:first-child,th:first-child{text-align:left}
.score{font-size:34px;font-weight:600}.legend span{display:inline-block;width:10px;height:10px;margin:0 4px 0 12px}
`

// Funcs are the pages' formatting functions: bytes (binary units),
// percent (a ratio) and delta (the change from before to after).
func Funcs() template.FuncMap {
	return template.FuncMap{
		"bytes":   func(n int64) string { return health.FormatBytes(n) },
		"percent": func(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) },
		"delta": func(before, after int64) string {
			if before == 0 {
				return ""
			}
			return fmt.Sprintf("%+.0f%%", 100*float64(after-before)/float64(before))
		},
	}
}

var pageTemplate = template.Must(template.New("page").Funcs(Funcs()).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{{.R.Table}}: health</title>
<style>{{.Style}}</style></head><body>
<h1>{{.R.Table}}</h1>
<div class="muted">snapshot {{.R.SnapshotID}} · generated {{.Generated}} · target file size {{bytes .R.Thresholds.TargetFileSize}}</div>

<h2>Score</h2>
<div class="grid">
<div class="card"><div class="score">{{.R.Score}}</div><div class="muted">0 healthy, 100 worst</div></div>
<div class="card"><table>
<tr><td>small files</td><td>{{percent .R.Debt.Files}}</td></tr>
<tr><td>delete files</td><td>{{percent .R.Debt.DeleteFiles}}</td></tr>
<tr><td>deleted rows</td><td>{{percent .R.Debt.DeletedRows}}</td></tr>
<tr><td>expirable snapshots</td><td>{{percent .R.Debt.Snapshots}}</td></tr>
<tr><td>extra manifests</td><td>{{percent .R.Debt.Manifests}}</td></tr>
</table></div>
<div class="card"><table>
<tr><td>data files</td><td>{{.R.DataFiles}} ({{bytes .R.DataBytes}}, average {{bytes .R.AvgFileBytes}})</td></tr>
<tr><td>small files</td><td>{{.R.SmallFiles}}</td></tr>
<tr><td>delete files</td><td>{{.R.PositionDeleteFiles}} position, {{.R.DeletionVectors}} DV, {{.R.EqualityDeleteFiles}} equality</td></tr>
<tr><td>snapshots</td><td>{{.R.Snapshots}} ({{.R.ExpirableSnapshots}} expirable)</td></tr>
</table></div>
</div>

<h2>Recommendations</h2>
{{if .R.Recommendations}}<ul>{{range .R.Recommendations}}<li><b>{{.Action}}</b>: {{.Why}}{{if .EstimatedFiles}} ({{.EstimatedFiles}} files, {{bytes .EstimatedBytes}}){{end}}</li>{{end}}</ul>
{{else}}<p>None: the table is healthy.</p>{{end}}
{{if .R.Columns}}
<h2>Pruning</h2>
<p class="muted">How well the files are clustered on each column, from the manifests' bounds (per partition, the deepest and the average over files): overlap depth 1 means sorted.</p>
<table><tr><th>column</th><th>files with bounds</th><th>overlap depth</th><th>files per point lookup</th></tr>
{{range .R.Columns}}<tr><td>{{.Column}}{{if .OneValue}} (one value){{end}}</td><td>{{.Files}}</td><td>{{.OverlapDepth}}</td><td>{{printf "%.1f" .PointLookupFiles}}</td></tr>
{{end}}</table>
{{end}}
{{if .R.HotPartitions}}
<h2>Hot partitions</h2>
<p class="muted">Written within the idle time of {{.R.Thresholds.HotIdle}} (icekeeper.compaction.hot-partition.idle-time).</p>
<ul>{{range .R.HotPartitions}}<li><b>{{.Partition}}</b>{{if .Skipped}} (left alone){{end}}: {{.Why}}</li>{{end}}</ul>
{{end}}

<h2>File sizes per partition</h2>
<p class="muted">Data files by size; the outlined bar holds the target size.{{if .More}} The {{.More}} partitions with the fewest files are not drawn.{{end}}</p>
<div class="grid" id="histograms">{{range .Histograms}}{{.}}{{end}}</div>

<h2>Deletes per partition</h2>
<div class="legend muted"><span style="background:{{.Colours.Position}}"></span>position delete files<span style="background:{{.Colours.DV}}"></span>deletion vectors<span style="background:{{.Colours.Equality}}"></span>equality delete files</div>
{{.Deletes}}

<h2>Snapshots over time</h2>
<div class="legend muted"><span style="background:{{.Colours.DataLine}}"></span>data files<span style="background:{{.Colours.DeleteLine}}"></span>delete files<span style="background:{{.Colours.Compacted}}"></span>icekeeper compaction</div>
{{.History}}

<h2>Manifests</h2>
<p>{{.R.DataManifests}} data manifests, {{.R.DeleteManifests}} delete manifests, {{bytes .R.ManifestBytes}} in all; metadata file {{bytes .R.MetadataBytes}}, {{.R.PreviousMetadataFiles}} previous metadata files.</p>
{{.Manifests}}

<h2>Before and after compaction</h2>
{{with .Compaction}}<p>icekeeper job {{.JobID}}, snapshot {{.SnapshotID}}, {{.At.Format "2006-01-02 15:04:05 MST"}}:</p>
<table id="before-after"><tr><th></th><th>before</th><th>after</th><th></th></tr>
<tr><td>data files</td><td>{{.Before.DataFiles}}</td><td>{{.After.DataFiles}}</td><td>{{delta .Before.DataFiles .After.DataFiles}}</td></tr>
<tr><td>delete files</td><td>{{.Before.DeleteFiles}}</td><td>{{.After.DeleteFiles}}</td><td>{{delta .Before.DeleteFiles .After.DeleteFiles}}</td></tr>
<tr><td>rows written (deletes not applied)</td><td>{{.Before.Records}}</td><td>{{.After.Records}}</td><td>{{delta .Before.Records .After.Records}}</td></tr>
<tr><td>position deletes</td><td>{{.Before.PositionDeletes}}</td><td>{{.After.PositionDeletes}}</td><td></td></tr>
<tr><td>equality deletes</td><td>{{.Before.EqualityDeletes}}</td><td>{{.After.EqualityDeletes}}</td><td></td></tr>
<tr><td>file bytes</td><td>{{bytes .Before.FilesSize}}</td><td>{{bytes .After.FilesSize}}</td><td>{{delta .Before.FilesSize .After.FilesSize}}</td></tr>
</table>{{else}}<p>icekeeper has not compacted this table (in its current history).</p>{{end}}
</body></html>
`))

// bucketLabels name FileSizeBounds' buckets.
func bucketLabels() []string {
	var out []string
	for _, b := range health.FileSizeBounds {
		out = append(out, "<"+shortBytes(b))
	}
	return append(out, "≥"+shortBytes(health.FileSizeBounds[len(health.FileSizeBounds)-1]))
}

func shortBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return strconv.FormatInt(n>>30, 10) + "G"
	case n >= 1<<20:
		return strconv.FormatInt(n>>20, 10) + "M"
	default:
		return strconv.FormatInt(n>>10, 10) + "K"
	}
}

// targetBucket is the histogram bucket a file of the target size falls in.
func targetBucket(target int64) int {
	for i, b := range health.FileSizeBounds {
		if target < b {
			return i
		}
	}
	return len(health.FileSizeBounds)
}

// histogram draws one partition's file-size histogram.
func histogram(p health.PartitionHealth, target int64) template.HTML {
	const w, h, top, bottom = 300, 120, 22, 18
	n := len(p.SizeHistogram)
	if n == 0 {
		return ""
	}
	peak := 1
	for _, c := range p.SizeHistogram {
		peak = max(peak, c)
	}
	bw := float64(w) / float64(n)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart histogram" width="%d" height="%d" role="img" aria-label="file sizes of %s">`, w, h, template.HTMLEscapeString(p.Partition))
	files := "files"
	if p.DataFiles == 1 {
		files = "file"
	}
	fmt.Fprintf(&b, `<text x="0" y="14" font-size="12">%s · %d %s</text>`, template.HTMLEscapeString(p.Partition), p.DataFiles, files)
	labels := bucketLabels()
	tb := targetBucket(target)
	for i, c := range p.SizeHistogram {
		bh := float64(h-top-bottom) * float64(c) / float64(peak)
		x := float64(i) * bw
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %d files</title></rect>`,
			x+1, float64(h-bottom)-bh, bw-2, bh, ColourData, labels[i], c)
		if i == tb {
			fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="none" stroke="%s" stroke-width="1.5"/>`, x+0.5, top, bw-1, h-top-bottom, ColourDV)
		}
		if i%2 == 0 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="9" fill="#666">%s</text>`, x+1, h-4, template.HTMLEscapeString(labels[i]))
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// deletesChart draws the delete files of each partition as stacked bars.
func deletesChart(parts []health.PartitionHealth) template.HTML {
	var with []health.PartitionHealth
	peak := 0
	for _, p := range parts {
		if p.DeleteFiles > 0 {
			with = append(with, p)
			peak = max(peak, p.DeleteFiles)
		}
	}
	if len(with) == 0 {
		return template.HTML(`<p>No delete files.</p>`)
	}
	const w, label, row = 900, 220, 18
	h := row*len(with) + 4
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart deletes" width="%d" height="%d" role="img" aria-label="delete files per partition">`, w, h)
	scale := float64(w-label-60) / float64(peak)
	for i, p := range with {
		y := i*row + 2
		fmt.Fprintf(&b, `<text x="0" y="%d" font-size="12">%s</text>`, y+12, template.HTMLEscapeString(p.Partition))
		x := float64(label)
		for _, seg := range []struct {
			n      int
			colour string
			what   string
		}{{p.PositionDeleteFiles, ColourPosition, "position delete files"}, {p.DeletionVectors, ColourDV, "deletion vectors"}, {p.EqualityDeleteFiles, ColourEquality, "equality delete files"}} {
			if seg.n == 0 {
				continue
			}
			sw := float64(seg.n) * scale
			fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"><title>%d %s</title></rect>`, x, y, sw, row-4, seg.colour, seg.n, seg.what)
			x += sw
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="11" fill="#666">%d</text>`, x+4, y+12, p.DeleteFiles)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// historyChart draws data and delete files over the snapshots.
func historyChart(snaps []SnapshotPoint) template.HTML {
	if len(snaps) == 0 {
		return template.HTML(`<p>No snapshots.</p>`)
	}
	const w, h, left, right, top, bottom = 900, 240, 50, 10, 10, 30
	peak := int64(1)
	for _, s := range snaps {
		peak = max(peak, s.Totals.DataFiles, s.Totals.DeleteFiles)
	}
	t0, t1 := snaps[0].At, snaps[len(snaps)-1].At
	span := t1.Sub(t0)
	// Evenly spaced when the snapshots share one instant (or nearly).
	xOf := func(i int, at time.Time) float64 {
		if span < time.Second || len(snaps) == 1 {
			if len(snaps) == 1 {
				return left
			}
			return left + float64(w-left-right)*float64(i)/float64(len(snaps)-1)
		}
		return left + float64(w-left-right)*float64(at.Sub(t0))/float64(span)
	}
	yOf := func(v int64) float64 { return float64(top) + float64(h-top-bottom)*(1-float64(v)/float64(peak)) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart history" width="%d" height="%d" role="img" aria-label="data and delete files over snapshots">`, w, h)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#999"/>`, left, h-bottom, w-right, h-bottom)
	fmt.Fprintf(&b, `<text x="0" y="%d" font-size="11" fill="#666">%d</text><text x="0" y="%d" font-size="11" fill="#666">0</text>`, top+10, peak, h-bottom)
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" fill="#666">%s</text>`, left, h-8, t0.Format("2006-01-02 15:04"))
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" fill="#666" text-anchor="end">%s · %d snapshots</text>`, w-right, h-8, t1.Format("2006-01-02 15:04"), len(snaps))
	for _, series := range []struct {
		colour string
		v      func(Totals) int64
	}{{ColourDataLine, func(t Totals) int64 { return t.DataFiles }}, {ColourDeleteLine, func(t Totals) int64 { return t.DeleteFiles }}} {
		var pts []string
		for i, s := range snaps {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", xOf(i, s.At), yOf(series.v(s.Totals))))
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="3"/>`, strings.Join(pts, " "), series.colour)
	}
	for i, s := range snaps {
		if s.JobID != "" {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="7" fill="%s"><title>icekeeper job %s</title></circle>`, xOf(i, s.At), yOf(s.Totals.DataFiles), ColourCompacted, template.HTMLEscapeString(s.JobID))
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// manifestsChart draws the current snapshot's manifests by content.
func manifestsChart(r health.Report) template.HTML {
	total := r.DataManifests + r.DeleteManifests
	if total == 0 {
		return ""
	}
	const w = 600
	dw := float64(w) * float64(r.DataManifests) / float64(total)
	return template.HTML(fmt.Sprintf(`<svg class="chart manifests" width="%d" height="24" role="img" aria-label="manifests">`+
		`<rect x="0" y="2" width="%.1f" height="20" fill="%s"><title>%d data manifests</title></rect>`+
		`<rect x="%.1f" y="2" width="%.1f" height="20" fill="%s"><title>%d delete manifests</title></rect></svg>`,
		w, dw, ColourDataManifests, r.DataManifests, dw, float64(w)-dw, ColourDeleteManifests, r.DeleteManifests))
}
