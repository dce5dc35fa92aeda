package health

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"

	"github.com/icekeeper/icekeeper/shared/messages"
)

var unchangedAt = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

// publishedReport is a report as the planner publishes it (its layout
// advice is a field Report does not have), generated at.
func publishedReport(t *testing.T, at time.Time, edit func(r *Report, extra map[string]any)) []byte {
	t.Helper()
	oldest := unchangedAt.Add(-72 * time.Hour) // the table's, whenever assessed
	th, err := ThresholdsFor(nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	r := Report{
		Table: "shop.orders", SnapshotID: 42, MetadataLocation: "s3://wh/shop.db/orders/metadata/00003.metadata.json",
		GeneratedAt: at, Thresholds: th, Snapshots: 3, ExpirableSnapshots: 1,
		OldestSnapshotAt: &oldest, OldestSnapshotAgeSeconds: int64(at.Sub(oldest) / time.Second),
		FileStats:       FileStats{DataFiles: 10, DataBytes: 1000, SizeHistogram: make([]int, len(FileSizeBounds)+1)},
		Partitions:      []PartitionHealth{{Partition: Unpartitioned, FileStats: FileStats{DataFiles: 10, DataBytes: 1000}}},
		Score:           12.5,
		Recommendations: []Recommendation{{Action: ActionCompaction, Why: "small files", EstimatedBytes: 1000, EstimatedFiles: 10}},
	}
	extra := map[string]any{"layout": map[string]any{"layout": "sort", "columns": []string{"id"}, "change": false}}
	if edit != nil {
		edit(&r, extra)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range extra {
		m[k] = v
	}
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestUnchanged_FieldsThatMoveWithTheClockAreIgnored: the same table
// state assessed an hour later differs only in when it was generated and
// how old its oldest snapshot is: unchanged, and so is each of those
// fields differing alone.
func TestUnchanged_FieldsThatMoveWithTheClockAreIgnored(t *testing.T) {
	prev := publishedReport(t, unchangedAt, nil)
	later := unchangedAt.Add(time.Hour)
	for name, next := range map[string][]byte{
		"identical":     publishedReport(t, unchangedAt, nil),
		"an hour later": publishedReport(t, later, nil),
		"generated_at only": publishedReport(t, unchangedAt, func(r *Report, _ map[string]any) {
			r.GeneratedAt = later
		}),
		"oldest_snapshot_age_seconds only": publishedReport(t, unchangedAt, func(r *Report, _ map[string]any) {
			r.OldestSnapshotAgeSeconds += 3600
		}),
	} {
		if !Unchanged(prev, next, RefreshAge) {
			t.Errorf("%s: changed, want unchanged", name)
		}
	}
}

// TestUnchanged_AnyOtherFieldIsAChange: the table's state, its
// thresholds, its layout advice, a field the package does not know:
// each differing alone means the report is written.
func TestUnchanged_AnyOtherFieldIsAChange(t *testing.T) {
	prev := publishedReport(t, unchangedAt, nil)
	later := unchangedAt.Add(time.Hour)
	for name, edit := range map[string]func(r *Report, extra map[string]any){
		"snapshot_id":         func(r *Report, _ map[string]any) { r.SnapshotID++ },
		"metadata_location":   func(r *Report, _ map[string]any) { r.MetadataLocation += ".new" },
		"expirable_snapshots": func(r *Report, _ map[string]any) { r.ExpirableSnapshots++ },
		"thresholds":          func(r *Report, _ map[string]any) { r.Thresholds.MaxSnapshots++ },
		"oldest_snapshot_at": func(r *Report, _ map[string]any) {
			at := r.OldestSnapshotAt.Add(time.Hour)
			r.OldestSnapshotAt = &at
		},
		"score":           func(r *Report, _ map[string]any) { r.Score = 12.6 },
		"a partition":     func(r *Report, _ map[string]any) { r.Partitions[0].DataFiles++ },
		"recommendations": func(r *Report, _ map[string]any) { r.Recommendations = []Recommendation{} },
		"layout advice": func(_ *Report, extra map[string]any) {
			extra["layout"] = map[string]any{"layout": "sort", "columns": []string{"id"}, "change": true}
		},
		"an unknown field": func(_ *Report, extra map[string]any) { extra["layout_error"] = "signals not read" },
	} {
		if Unchanged(prev, publishedReport(t, later, edit), RefreshAge) {
			t.Errorf("%s differs: unchanged, want changed", name)
		}
	}
}

// TestUnchanged_AReportIsRewrittenOnceARefreshAgeOld: an unchanged
// report whose published one is a refresh age old (or from the future)
// is written again.
func TestUnchanged_AReportIsRewrittenOnceARefreshAgeOld(t *testing.T) {
	prev := publishedReport(t, unchangedAt, nil)
	for _, c := range []struct {
		after     time.Duration
		unchanged bool
	}{
		{0, true},
		{RefreshAge - time.Second, true},
		{RefreshAge, false},
		{RefreshAge + time.Hour, false},
		{-time.Hour, false},
	} {
		if got := Unchanged(prev, publishedReport(t, unchangedAt.Add(c.after), nil), RefreshAge); got != c.unchanged {
			t.Errorf("next generated %s after the published one: unchanged %t, want %t", c.after, got, c.unchanged)
		}
	}
}

// TestUnchanged_AnUndecodableReportIsAChange: a published report that is
// not a JSON object with a generated_at (garbage, empty, null, an array)
// is replaced.
func TestUnchanged_AnUndecodableReportIsAChange(t *testing.T) {
	next := publishedReport(t, unchangedAt, nil)
	noStamp := publishedReport(t, unchangedAt, nil)
	var m map[string]any
	if err := json.Unmarshal(noStamp, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "generated_at")
	noStamp, _ = json.Marshal(m)
	for name, prev := range map[string][]byte{
		"garbage": []byte("<Error>AccessDenied</Error>"), "empty": nil, "null": []byte("null"), "an array": []byte("[]"),
		"truncated": next[:len(next)/2], "no generated_at": noStamp,
	} {
		if Unchanged(prev, next, RefreshAge) {
			t.Errorf("published report %s: unchanged, want changed", name)
		}
		if Unchanged(next, prev, RefreshAge) {
			t.Errorf("next report %s: unchanged, want changed", name)
		}
	}
}

// TestUnchanged_AHotPartitionsAgeIsIgnored: ScopeHot's why says how long
// ago a hot partition was written; assessed later with nothing written
// since, the report is unchanged, but another candidate file is a change.
func TestUnchanged_AHotPartitionsAgeIsIgnored(t *testing.T) {
	spec := regionSpec()
	written := unchangedAt.Add(-time.Minute)
	report := func(now time.Time, files int) []byte {
		var g compaction.Group
		for i := range files {
			g.Tasks = append(g.Tasks, table.FileScanTask{File: hotFile(t, spec, fmt.Sprintf("f%d", i), "a")})
		}
		writes := map[string]time.Time{messages.PartitionKey(g.Tasks[0].File): written}
		_, parts := ScopeHot([]compaction.Group{g}, writes, now, time.Hour, 5, func(iceberg.DataFile) string { return "region=a" })
		if len(parts) != 1 {
			t.Fatalf("hot partitions %+v, want region a", parts)
		}
		return publishedReport(t, now, func(r *Report, _ map[string]any) { r.HotPartitions = parts })
	}
	prev := report(unchangedAt, 3)
	later := unchangedAt.Add(20 * time.Minute)
	if next := report(later, 3); !Unchanged(prev, next, RefreshAge) {
		t.Errorf("hot partition assessed again later, nothing written:\n%s\n%s\nchanged, want unchanged", prev, next)
	}
	if Unchanged(prev, report(later, 4), RefreshAge) {
		t.Error("a hot partition with another candidate file: unchanged, want changed")
	}
}

// TestHistoryDue_TheFirstChangeOfEachHour: a changed report goes into the
// history when the latest.json it replaces was generated in an earlier UTC
// hour, or is missing or undecodable; not when it is from the same hour.
func TestHistoryDue_TheFirstChangeOfEachHour(t *testing.T) {
	at := func(s string) []byte { return []byte(`{"generated_at":"` + s + `","score":1}`) }
	for _, c := range []struct {
		name       string
		prev, next []byte
		want       bool
	}{
		{"no latest.json yet", nil, at("2026-12-05T10:20:00Z"), true},
		{"the same hour", at("2026-12-05T10:00:00Z"), at("2026-12-05T10:59:59.999Z"), false},
		{"the next hour, a minute later", at("2026-12-05T10:59:30Z"), at("2026-12-05T11:00:30Z"), true},
		{"a day later", at("2026-12-04T10:20:00Z"), at("2026-12-05T10:20:00Z"), true},
		{"an offset other than UTC, the same UTC hour", at("2026-12-05T11:10:00+01:00"), at("2026-12-05T10:50:00Z"), false},
		{"latest.json from a later hour (a clock that went back)", at("2026-12-05T12:00:00Z"), at("2026-12-05T11:00:00Z"), false},
		{"latest.json undecodable", []byte("{"), at("2026-12-05T10:20:00Z"), true},
		{"latest.json without generated_at", []byte(`{"score":1}`), at("2026-12-05T10:20:00Z"), true},
	} {
		if got := HistoryDue(c.prev, c.next); got != c.want {
			t.Errorf("%s: HistoryDue = %v, want %v", c.name, got, c.want)
		}
	}
}
