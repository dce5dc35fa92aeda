package interop

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
)

// reading is what Spark reads of the table at one moment: the rows at the
// current snapshot, at every ref and at every snapshot, the refs, and the
// table metadata fields that must survive maintenance.
type reading struct {
	current   []string
	refs      map[string]refReading
	snapshots map[int64][]string
	// metadata is the current metadata file's fields that icekeeper must
	// keep as they are (see keptFields).
	metadata map[string]json.RawMessage
	// nextRowID is a v3 table's next-row-id (it only grows).
	nextRowID int64
	// lineage is a v3 table's current rows with their row lineage
	// (_row_id, _last_updated_sequence_number), as Spark reads them.
	lineage []string
}

type refReading struct {
	Type       string
	SnapshotID int64
	Rows       []string
}

// maxSnapshotsRead bounds how many snapshots a reading reads (newest first).
const maxSnapshotsRead = 40

// read takes a reading through Spark.
func (w *world) read() reading {
	w.t.Helper()
	r := reading{current: w.rows(""), refs: map[string]refReading{}, snapshots: map[int64][]string{}}
	r.metadata, r.nextRowID = w.currentMetadata()
	if r.nextRowID > 0 {
		r.lineage = sortedRows(w.sql("SELECT *, _row_id, _last_updated_sequence_number FROM {t}"))
	}
	for _, raw := range w.sql("SELECT name, type, snapshot_id FROM {t}.refs") {
		var ref struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			SnapshotID int64  `json:"snapshot_id"`
		}
		mustUnmarshal(w, raw, &ref)
		r.refs[ref.Name] = refReading{Type: ref.Type, SnapshotID: ref.SnapshotID, Rows: w.rows(sqlString(ref.Name))}
	}
	for _, id := range w.snapshotIDs() {
		if len(r.snapshots) == maxSnapshotsRead {
			break
		}
		r.snapshots[id] = w.rows(fmt.Sprint(id))
	}
	return r
}

// snapshotIDs lists the table's snapshots, newest first.
func (w *world) snapshotIDs() []int64 {
	w.t.Helper()
	var ids []int64
	for _, raw := range w.sql("SELECT snapshot_id FROM {t}.snapshots ORDER BY committed_at DESC") {
		var s struct {
			SnapshotID int64 `json:"snapshot_id"`
		}
		mustUnmarshal(w, raw, &s)
		ids = append(ids, s.SnapshotID)
	}
	return ids
}

// mainSnapshot is the snapshot main points at.
func (w *world) mainSnapshot() int64 {
	w.t.Helper()
	raw := w.sql("SELECT snapshot_id FROM {t}.refs WHERE name = 'main'")
	if len(raw) != 1 {
		w.t.Fatalf("refs: %d rows for main", len(raw))
	}
	var s struct {
		SnapshotID int64 `json:"snapshot_id"`
	}
	mustUnmarshal(w, raw[0], &s)
	return s.SnapshotID
}

// keptFields are the table metadata fields no maintenance job may change:
// what the table's owner and other engines set.
var keptFields = []string{
	"format-version", "table-uuid", "location", "properties", "schemas", "current-schema-id",
	"partition-specs", "default-spec-id", "sort-orders", "default-sort-order-id",
	"statistics", "partition-statistics", "last-column-id", "last-partition-id",
}

// currentMetadata reads the current metadata file (gzip or not) as Spark's
// metadata_log_entries names it.
func (w *world) currentMetadata() (map[string]json.RawMessage, int64) {
	w.t.Helper()
	raw := w.sql("SELECT file FROM {t}.metadata_log_entries ORDER BY timestamp DESC LIMIT 1")
	if len(raw) != 1 {
		w.t.Fatalf("metadata_log_entries: %d rows", len(raw))
	}
	var e struct {
		File string `json:"file"`
	}
	mustUnmarshal(w, raw[0], &e)
	b, err := os.ReadFile(localPath(e.File))
	if err != nil {
		w.t.Fatalf("read the current metadata file: %v", err)
	}
	if bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			w.t.Fatal(err)
		}
		if b, err = io.ReadAll(zr); err != nil {
			w.t.Fatal(err)
		}
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		w.t.Fatalf("parse %s: %v", e.File, err)
	}
	kept := map[string]json.RawMessage{}
	for _, k := range keptFields {
		if v, ok := all[k]; ok {
			if c := canonicalJSON(w, v); string(c) != "[]" {
				kept[k] = c
			}
		}
	}
	var next int64
	if v, ok := all["next-row-id"]; ok {
		mustUnmarshal(w, v, &next)
	}
	return kept, next
}

// requireSame checks what a maintenance job may not change: every row at
// every ref and at every snapshot still kept, the refs (main may move to
// the job's snapshot), and the kept metadata fields. expired allows
// snapshots to be gone (snapshot expiry), never refs.
func (w *world) requireSame(before, after reading, expired bool) []string {
	var bad []string
	if !reflect.DeepEqual(before.current, after.current) {
		bad = append(bad, "current rows: "+diffRows(before.current, after.current))
	}
	for name, ref := range before.refs {
		got, ok := after.refs[name]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("ref %s is gone", name))
		case !reflect.DeepEqual(ref.Rows, got.Rows):
			bad = append(bad, fmt.Sprintf("rows of ref %s: %s", name, diffRows(ref.Rows, got.Rows)))
		case name != "main" && ref.SnapshotID != got.SnapshotID:
			bad = append(bad, fmt.Sprintf("ref %s moved from %d to %d", name, ref.SnapshotID, got.SnapshotID))
		}
	}
	for name := range after.refs {
		if _, ok := before.refs[name]; !ok {
			bad = append(bad, fmt.Sprintf("ref %s appeared", name))
		}
	}
	for id, rows := range before.snapshots {
		got, ok := after.snapshots[id]
		if !ok {
			if !expired && len(after.snapshots) < maxSnapshotsRead {
				bad = append(bad, fmt.Sprintf("snapshot %d is gone", id))
			}
			continue
		}
		if !reflect.DeepEqual(rows, got) {
			bad = append(bad, fmt.Sprintf("rows of snapshot %d: %s", id, diffRows(rows, got)))
		}
	}
	for k, v := range before.metadata {
		if expired && (k == "statistics" || k == "partition-statistics") {
			// Expiry drops the statistics of the snapshots it removes
			// (Iceberg Java's RemoveSnapshots does); the rest stay.
			if v = statisticsOf(w, v, after.snapshots); string(v) == "[]" {
				v = nil
			}
		}
		if !bytes.Equal(v, after.metadata[k]) {
			bad = append(bad, fmt.Sprintf("metadata %s changed:\n  before %s\n  after  %s", k, v, after.metadata[k]))
		}
	}
	if len(before.lineage) > 0 || len(after.lineage) > 0 {
		if d := diffRows(before.lineage, after.lineage); !slices.Equal(before.lineage, after.lineage) {
			bad = append(bad, "row lineage (_row_id, _last_updated_sequence_number) changed: "+d)
		}
	}
	if after.nextRowID < before.nextRowID {
		bad = append(bad, fmt.Sprintf("next-row-id went back from %d to %d", before.nextRowID, after.nextRowID))
	}
	return bad
}

// statisticsOf keeps the statistics entries of the snapshots given.
func statisticsOf(w *world, v json.RawMessage, snapshots map[int64][]string) json.RawMessage {
	var entries []map[string]any
	mustUnmarshal(w, v, &entries)
	kept := []map[string]any{}
	for _, e := range entries {
		id, _ := e["snapshot-id"].(float64)
		if _, ok := snapshots[int64(id)]; ok {
			kept = append(kept, e)
		}
	}
	b, err := json.Marshal(kept)
	if err != nil {
		w.t.Fatal(err)
	}
	return b
}

// requireFilesOnStorage checks that every file Spark's metadata tables
// name (data and delete files and manifests of every snapshot, the
// metadata log, statistics) is still on storage.
func (w *world) requireFilesOnStorage() []string {
	var bad []string
	for _, q := range []string{
		"SELECT DISTINCT file_path AS p FROM {t}.all_data_files",
		"SELECT DISTINCT file_path AS p FROM {t}.all_delete_files",
		"SELECT DISTINCT path AS p FROM {t}.all_manifests",
		"SELECT file AS p FROM {t}.metadata_log_entries ORDER BY timestamp DESC LIMIT 1",
	} {
		for _, raw := range w.sql("%s", q) {
			var f struct {
				P string `json:"p"`
			}
			mustUnmarshal(w, raw, &f)
			if _, err := os.Stat(localPath(f.P)); err != nil {
				bad = append(bad, fmt.Sprintf("%s is needed and gone (%v)", f.P, err))
			}
		}
	}
	md, _ := w.currentMetadata()
	for _, key := range []string{"statistics", "partition-statistics"} {
		var files []struct {
			Path string `json:"statistics-path"`
		}
		if v, ok := md[key]; ok {
			mustUnmarshal(w, v, &files)
		}
		for _, f := range files {
			if _, err := os.Stat(localPath(f.Path)); err != nil {
				bad = append(bad, fmt.Sprintf("%s file %s is needed and gone", key, f.Path))
			}
		}
	}
	return bad
}

// localPath is the local file a file: URI names (Spark writes file:/p,
// iceberg-go file:///p).
func localPath(uri string) string {
	if u, err := url.Parse(uri); err == nil && u.Scheme == "file" {
		return u.Path
	}
	return uri
}

func diffRows(want, got []string) string {
	missing, extra := multisetDiff(want, got), multisetDiff(got, want)
	const show = 3
	cut := func(s []string) []string {
		if len(s) > show {
			return append(s[:show:show], fmt.Sprintf("... %d more", len(s)-show))
		}
		return s
	}
	return fmt.Sprintf("%d rows before, %d after; missing %v; extra %v", len(want), len(got), cut(missing), cut(extra))
}

// multisetDiff is a minus b, counting duplicates.
func multisetDiff(a, b []string) []string {
	n := map[string]int{}
	for _, s := range b {
		n[s]++
	}
	var out []string
	for _, s := range a {
		if n[s] > 0 {
			n[s]--
			continue
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// canonicalJSON re-encodes v with sorted keys and without empty lists:
// iceberg-go writes "identifier-field-ids": [] and "statistics": [] where
// Iceberg Java leaves the optional field out, which the spec reads alike.
func canonicalJSON(w *world, v json.RawMessage) json.RawMessage {
	var x any
	mustUnmarshal(w, v, &x)
	b, err := json.Marshal(dropEmptyLists(x))
	if err != nil {
		w.t.Fatal(err)
	}
	return b
}

func mustUnmarshal(w *world, raw json.RawMessage, v any) {
	w.t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		w.t.Fatalf("decode %s: %v", raw, err)
	}
}

// sqlString quotes s as a Spark SQL string literal.
func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "\\'") + "'" }

func dropEmptyLists(x any) any {
	switch v := x.(type) {
	case map[string]any:
		for k, e := range v {
			if l, ok := e.([]any); ok && len(l) == 0 {
				delete(v, k)
				continue
			}
			v[k] = dropEmptyLists(e)
		}
	case []any:
		for i, e := range v {
			v[i] = dropEmptyLists(e)
		}
	}
	return x
}
