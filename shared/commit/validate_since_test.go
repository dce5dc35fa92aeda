package commit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/deletefiles"
	"github.com/icekeeper/icekeeper/shared/messages"
)

// The concurrency validation (ValidateSince, validateSnapshot) reads the
// manifests a snapshot committed since the pin wrote. The tests below
// write real manifests and manifest lists to a temporary directory, one
// snapshot per case, so the rules are exercised on what iceberg-go reads
// back (entry status, content, data sequence number, partition), not on
// hand-made structs.
//
// Spec, "Scan Planning" (format/spec.md): a position delete file or a
// deletion vector applies to data files whose data sequence number is
// less than or equal to its own, in the same partition (and, when set,
// to its referenced_data_file only); an equality delete applies to data
// files whose data sequence number is strictly less than its own, in the
// same partition, or in every partition when its spec is unpartitioned.

var (
	vsSchema = iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "region", Type: iceberg.PrimitiveTypes.String},
	)
	// vsSpec is spec 1, identity(region); spec 0 is unpartitioned.
	vsSpec = iceberg.NewPartitionSpecID(1, iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "region", Transform: iceberg.IdentityTransform{}})
)

// vsFile describes one content file of a test snapshot.
type vsFile struct {
	content iceberg.ManifestEntryContent
	path    string
	region  string // "" for the unpartitioned spec
	ref     string // referenced_data_file
	lo, hi  string // file_path bounds
	dv      bool   // a deletion vector (content offset set)
}

func (f vsFile) build(t *testing.T) iceberg.DataFile {
	t.Helper()
	spec, part := *iceberg.UnpartitionedSpec, map[int]any(nil)
	if f.region != "" {
		spec, part = vsSpec, map[int]any{1000: f.region}
	}
	format := iceberg.ParquetFile
	if f.dv {
		format = iceberg.PuffinFile
	}
	b, err := iceberg.NewDataFileBuilder(spec, f.content, f.path, format, part, nil, nil, 3, 100)
	if err != nil {
		t.Fatal(err)
	}
	if f.content == iceberg.EntryContentEqDeletes {
		b.EqualityFieldIDs([]int{1})
	}
	if f.ref != "" {
		b.ReferencedDataFile(f.ref)
	}
	if f.lo != "" {
		b.LowerBoundValues(map[int][]byte{deletefiles.PathFieldID: []byte(f.lo)})
		b.UpperBoundValues(map[int][]byte{deletefiles.PathFieldID: []byte(f.hi)})
	}
	if f.dv {
		b.ContentOffset(4).ContentSizeInBytes(40)
	}
	return b.Build()
}

func data(path, region string) vsFile {
	return vsFile{content: iceberg.EntryContentData, path: path, region: region}
}
func eqDelete(path, region string) vsFile {
	return vsFile{content: iceberg.EntryContentEqDeletes, path: path, region: region}
}
func posDelete(path, region string) vsFile {
	return vsFile{content: iceberg.EntryContentPosDeletes, path: path, region: region}
}

// vsEntry is one manifest entry: a file, its status and its data
// sequence number (0: inherited from the snapshot, as a new entry's is).
type vsEntry struct {
	status iceberg.ManifestEntryStatus
	file   vsFile
	seq    int64
}

func added(f vsFile) vsEntry { return vsEntry{status: iceberg.EntryStatusADDED, file: f} }
func addedAt(f vsFile, seq int64) vsEntry {
	return vsEntry{status: iceberg.EntryStatusADDED, file: f, seq: seq}
}
func removed(f vsFile) vsEntry { return vsEntry{status: iceberg.EntryStatusDELETED, file: f, seq: 1} }

// writeSnapshot writes snapshot id (sequence number seq, parent parent)
// whose manifests hold entries, one manifest per spec and content, plus
// the manifests of earlier (carried over, as a later snapshot's list
// keeps an earlier snapshot's manifests).
func writeSnapshot(t *testing.T, dir string, id, seq int64, parent *int64, entries []vsEntry, earlier []iceberg.ManifestFile) (*table.Snapshot, []iceberg.ManifestFile) {
	t.Helper()
	type key struct {
		spec    int
		content iceberg.ManifestContent
	}
	groups := map[key][]iceberg.ManifestEntry{}
	var keys []key
	for _, e := range entries {
		k := key{0, iceberg.ManifestContentData}
		if e.file.region != "" {
			k.spec = 1
		}
		if e.file.content != iceberg.EntryContentData {
			k.content = iceberg.ManifestContentDeletes
		}
		var seqp *int64
		if e.seq > 0 {
			s := e.seq
			seqp = &s
		}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], iceberg.NewManifestEntry(e.status, &id, seqp, seqp, e.file.build(t)))
	}
	manifests := slices.Clone(earlier)
	for i, k := range keys {
		spec := *iceberg.UnpartitionedSpec
		if k.spec == 1 {
			spec = vsSpec
		}
		path := filepath.Join(dir, fmt.Sprintf("m-%d-%d.avro", id, i))
		var buf bytes.Buffer
		w, err := iceberg.NewManifestWriter(3, &buf, spec, vsSchema, id, iceberg.WithManifestWriterContent(k.content))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range groups[k] {
			switch e.Status() {
			case iceberg.EntryStatusADDED:
				err = w.Add(e)
			default:
				err = w.Delete(e)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		mf, err := w.ToManifestFile(path, int64(buf.Len()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		manifests = append(manifests, mf)
	}
	var list bytes.Buffer
	if err := iceberg.WriteManifestList(3, &list, id, parent, &seq, 0, manifests); err != nil {
		t.Fatal(err)
	}
	listPath := filepath.Join(dir, fmt.Sprintf("snap-%d.avro", id))
	if err := os.WriteFile(listPath, list.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// Read the list back: the manifests now carry the sequence number
	// the list assigned them, as a later snapshot's list would keep.
	f, err := os.Open(listPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stored, err := iceberg.ReadManifestList(f)
	if err != nil {
		t.Fatal(err)
	}
	return &table.Snapshot{SnapshotID: id, ParentSnapshotID: parent, SequenceNumber: seq, TimestampMs: 1000 * seq, ManifestList: listPath,
		Summary: &table.Summary{Operation: table.OpAppend}}, stored
}

func partKey(t *testing.T, f vsFile) string {
	return messages.PartitionKey(f.build(t))
}

// vsScope is the scope of a job that rewrites s3://t/data/a and
// s3://t/data/b, both in region eu, that applied delete files
// s3://t/del/applied-pos and s3://t/del/applied-eq, removes
// s3://t/del/dead as dead, and converts and removes an equality delete of
// eu with data sequence number 5.
func vsScope(t *testing.T) Scope {
	return Scope{
		Rewritten:           map[string]struct{}{"s3://t/data/a": {}, "s3://t/data/b": {}},
		RewrittenPartitions: map[string]struct{}{partKey(t, data("x", "eu")): {}},
		MovedPartitions:     map[string]struct{}{partKey(t, data("x", "moved")): {}},
		Removing:            map[string]struct{}{"s3://t/del/dead": {}},
		Applied:             map[string]struct{}{"s3://t/del/applied-pos": {}, "s3://t/del/applied-eq": {}},
		EqualityRemoved:     map[string]int64{partKey(t, data("x", "eu")): 5},
	}
}

// TestValidateSnapshot_AbortsOnlyForChangesThatLoseOrResurrectRows: one
// snapshot committed since the pin, table-driven: what it did, whether the
// job aborts (ErrAborted and ErrConcurrent), or what it leaves to the
// rebase.
func TestValidateSnapshot_AbortsOnlyForChangesThatLoseOrResurrectRows(t *testing.T) {
	cases := []struct {
		name        string
		rebase      bool
		global      bool // the job also converts a global equality delete at 5
		entries     []vsEntry
		wantAbort   string // a substring of the abort, "" for none
		wantAdded   []string
		wantRemoved []string
	}{
		// Data files.
		{name: "an append to a rewritten partition passes", entries: []vsEntry{added(data("s3://t/data/new", "eu"))}},
		{name: "removing an input file aborts", entries: []vsEntry{removed(data("s3://t/data/a", "eu"))}, wantAbort: "removed input file s3://t/data/a"},
		{name: "removing a file the job leaves alone passes", entries: []vsEntry{removed(data("s3://t/data/c", "eu"))}},
		// Equality deletes the job converts and removes (Scope.EqualityRemoved).
		{name: "a data file added below a removed equality delete's sequence number aborts", entries: []vsEntry{addedAt(data("s3://t/data/old", "eu"), 4)}, wantAbort: "below that of an equality delete"},
		{name: "a data file added at the removed equality delete's sequence number passes (strictly less applies)", entries: []vsEntry{addedAt(data("s3://t/data/same", "eu"), 5)}},
		{name: "a data file added above it passes", entries: []vsEntry{added(data("s3://t/data/new", "eu"))}},
		{name: "a data file added below it in another partition passes", entries: []vsEntry{addedAt(data("s3://t/data/us", "us"), 4)}},
		{name: "a data file added below a removed global equality delete aborts in any partition", global: true, entries: []vsEntry{addedAt(data("s3://t/data/us", "us"), 2)}, wantAbort: "below that of an equality delete"},
		// Delete files removed since the pin.
		{name: "removing a delete file the job removes too aborts", entries: []vsEntry{removed(eqDelete("s3://t/del/dead", "eu"))}, wantAbort: "which the job removes too"},
		{name: "removing an applied equality delete aborts", entries: []vsEntry{removed(eqDelete("s3://t/del/applied-eq", "eu"))}, wantAbort: "which the rewriters applied"},
		{name: "removing an applied equality delete aborts even with the rebase", rebase: true, entries: []vsEntry{removed(eqDelete("s3://t/del/applied-eq", "eu"))}, wantAbort: "which the rewriters applied"},
		{name: "removing an applied position delete aborts without the rebase", entries: []vsEntry{removed(posDelete("s3://t/del/applied-pos", "eu"))}, wantAbort: "which the rewriters applied"},
		{name: "removing an applied position delete goes to the rebase", rebase: true, entries: []vsEntry{removed(posDelete("s3://t/del/applied-pos", "eu"))}, wantRemoved: []string{"s3://t/del/applied-pos"}},
		{name: "removing a dead position delete goes to the rebase", rebase: true, entries: []vsEntry{removed(posDelete("s3://t/del/dead", "eu"))}, wantRemoved: []string{"s3://t/del/dead"}},
		{name: "removing an unrelated delete file passes", entries: []vsEntry{removed(posDelete("s3://t/del/other", "eu"))}},
		// Equality deletes added since the pin.
		{name: "an equality delete in a rewritten partition passes (the pinned sequence number keeps it applying)", entries: []vsEntry{added(eqDelete("s3://t/del/eq", "eu"))}},
		{name: "a global equality delete passes", entries: []vsEntry{added(eqDelete("s3://t/del/eq", ""))}},
		{name: "an equality delete scoped to a partition rows move across aborts", entries: []vsEntry{added(eqDelete("s3://t/del/eq", "moved"))}, wantAbort: "which rows of this job move across"},
		// Position deletes and deletion vectors added since the pin.
		{name: "a position delete referencing an input aborts", entries: []vsEntry{added(vsFile{content: iceberg.EntryContentPosDeletes, path: "s3://t/del/p", region: "eu", ref: "s3://t/data/a"})}, wantAbort: "rows of rewritten file s3://t/data/a"},
		{name: "a position delete referencing an input goes to the rebase", rebase: true, entries: []vsEntry{added(vsFile{content: iceberg.EntryContentPosDeletes, path: "s3://t/del/p", region: "eu", ref: "s3://t/data/a"})}, wantAdded: []string{"s3://t/del/p"}},
		{name: "a deletion vector of an input goes to the rebase", rebase: true, entries: []vsEntry{added(vsFile{content: iceberg.EntryContentPosDeletes, path: "s3://t/del/dv.puffin", region: "eu", ref: "s3://t/data/b", dv: true})}, wantAdded: []string{"s3://t/del/dv.puffin#4"}},
		{name: "a deletion vector of an input aborts without the rebase", entries: []vsEntry{added(vsFile{content: iceberg.EntryContentPosDeletes, path: "s3://t/del/dv.puffin", region: "eu", ref: "s3://t/data/b", dv: true})}, wantAbort: "rows of rewritten file s3://t/data/b"},
		{name: "a position delete referencing a file left alone passes", entries: []vsEntry{added(vsFile{content: iceberg.EntryContentPosDeletes, path: "s3://t/del/p", region: "eu", ref: "s3://t/data/c"})}},
		{name: "equal file_path bounds naming an input abort", entries: []vsEntry{added(vsFile{content: iceberg.EntryContentPosDeletes, path: "s3://t/del/p", region: "eu", lo: "s3://t/data/b", hi: "s3://t/data/b"})}, wantAbort: "rows of rewritten file s3://t/data/b"},
		{name: "file_path bounds spanning an input abort", entries: []vsEntry{added(vsFile{content: iceberg.EntryContentPosDeletes, path: "s3://t/del/p", region: "eu", lo: "s3://t/data/0", hi: "s3://t/data/a0"})}, wantAbort: "rows of rewritten file s3://t/data/a"},
		{name: "file_path bounds spanning no input pass", entries: []vsEntry{added(vsFile{content: iceberg.EntryContentPosDeletes, path: "s3://t/del/p", region: "eu", lo: "s3://t/data/c", hi: "s3://t/data/z"})}},
		{name: "an unbounded position delete in a rewritten partition aborts", entries: []vsEntry{added(posDelete("s3://t/del/p", "eu"))}, wantAbort: "partition-scoped position delete"},
		{name: "an unbounded position delete in a rewritten partition goes to the rebase", rebase: true, entries: []vsEntry{added(posDelete("s3://t/del/p", "eu"))}, wantAdded: []string{"s3://t/del/p"}},
		{name: "an unbounded position delete in another partition passes", entries: []vsEntry{added(posDelete("s3://t/del/p", "us"))}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			scope := vsScope(t)
			scope.Rebase = c.rebase
			if c.global {
				scope.EqualityRemoved[""] = 5
			}
			parent := int64(1)
			snap, _ := writeSnapshot(t, dir, 2, 7, &parent, c.entries, nil)
			conc, err := validateSnapshot(context.Background(), icebergio.LocalFS{}, snap, scope)
			if c.wantAbort != "" {
				if !errors.Is(err, ErrAborted) || !errors.Is(err, ErrConcurrent) || !strings.Contains(err.Error(), c.wantAbort) {
					t.Fatalf("err %v, want ErrAborted, ErrConcurrent and %q", err, c.wantAbort)
				}
				return
			}
			if err != nil {
				t.Fatalf("aborted: %v", err)
			}
			var gotAdded, gotRemoved []string
			for _, d := range conc.Added {
				gotAdded = append(gotAdded, fileKey(d))
			}
			for _, d := range conc.Removed {
				gotRemoved = append(gotRemoved, fileKey(d))
			}
			if !slices.Equal(gotAdded, c.wantAdded) || !slices.Equal(gotRemoved, c.wantRemoved) {
				t.Errorf("rebase gets added %v, removed %v; want %v, %v", gotAdded, gotRemoved, c.wantAdded, c.wantRemoved)
			}
		})
	}
}

// TestValidateSnapshot_ExaminesOnlyWhatTheSnapshotItselfWrote: the
// manifests a snapshot carries over from an earlier snapshot were
// examined with that snapshot (or predate the pin); examining them again
// would abort every job committed after an unrelated removal of an input.
func TestValidateSnapshot_ExaminesOnlyWhatTheSnapshotItselfWrote(t *testing.T) {
	dir := t.TempDir()
	one := int64(1)
	// Snapshot 1 (before the pin) removed input a; snapshot 2 appended.
	_, carried := writeSnapshot(t, dir, 1, 1, nil, []vsEntry{removed(data("s3://t/data/a", "eu"))}, nil)
	snap2, _ := writeSnapshot(t, dir, 2, 2, &one, []vsEntry{added(data("s3://t/data/new", "eu"))}, carried)
	scope := vsScope(t)
	scope.EqualityRemoved = nil
	if _, err := validateSnapshot(context.Background(), icebergio.LocalFS{}, snap2, scope); err != nil {
		t.Fatalf("snapshot 2 aborted for snapshot 1's removal: %v", err)
	}
}

// vsTable is a table whose snapshots are snaps (each the parent of the
// next), the last current, its files on the local file system.
func vsTable(t *testing.T, dir string, snaps []*table.Snapshot) *table.Table {
	t.Helper()
	meta, err := table.NewMetadata(vsSchema, &vsSpec, table.UnsortedSortOrder, "file://"+dir, iceberg.Properties{"format-version": "3"})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(meta)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	var list []any
	for _, s := range snaps {
		list = append(list, s)
	}
	head := snaps[len(snaps)-1]
	m["snapshots"] = list
	m["current-snapshot-id"] = head.SnapshotID
	m["last-sequence-number"] = head.SequenceNumber
	m["refs"] = map[string]any{"main": map[string]any{"snapshot-id": head.SnapshotID, "type": "branch"}}
	m["next-row-id"] = 1000
	if raw, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	meta, err = table.ParseMetadataBytes(raw)
	if err != nil {
		t.Fatalf("metadata: %v\n%s", err, raw)
	}
	return table.New(table.Identifier{"ns", "t"}, meta, filepath.Join(dir, "v1.metadata.json"),
		func(context.Context) (icebergio.IO, error) { return icebergio.LocalFS{}, nil }, nil)
}

// TestValidateSince_WalksEverySnapshotBackToThePin: every snapshot between
// the pin (exclusive) and the current one is examined, the pin and its
// ancestors are not, the rebase gets what all of them added, and a pin
// that is no longer an ancestor aborts.
func TestValidateSince_WalksEverySnapshotBackToThePin(t *testing.T) {
	dir := t.TempDir()
	p := func(v int64) *int64 { return &v }
	// 1: an append; 2: removes input a; 3: a position delete of input
	// b; 4: a deletion vector of input a.
	s1, m1 := writeSnapshot(t, dir, 1, 1, nil, []vsEntry{added(data("s3://t/data/x", "us"))}, nil)
	s2, m2 := writeSnapshot(t, dir, 2, 2, p(1), []vsEntry{removed(data("s3://t/data/a", "eu"))}, m1)
	s3, m3 := writeSnapshot(t, dir, 3, 3, p(2), []vsEntry{added(vsFile{content: iceberg.EntryContentPosDeletes, path: "s3://t/del/p3", region: "eu", ref: "s3://t/data/b"})}, m2)
	s4, _ := writeSnapshot(t, dir, 4, 4, p(3), []vsEntry{added(vsFile{content: iceberg.EntryContentPosDeletes, path: "s3://t/del/dv4.puffin", region: "eu", ref: "s3://t/data/a", dv: true})}, m3)
	tbl := vsTable(t, dir, []*table.Snapshot{s1, s2, s3, s4})
	ctx := context.Background()
	noEq := func(s Scope) Scope { s.EqualityRemoved = nil; return s }

	cases := []struct {
		name      string
		pin       int64
		rebase    bool
		wantAdded []string
		wantAbort string
	}{
		{name: "pinned at the current snapshot: nothing to examine", pin: 4, rebase: false},
		{name: "the snapshots since the pin go to the rebase, newest first", pin: 2, rebase: true, wantAdded: []string{"s3://t/del/dv4.puffin#4", "s3://t/del/p3"}},
		{name: "without the rebase the first that targets an input aborts", pin: 2, wantAbort: "snapshot 4 added a position delete or deletion vector"},
		{name: "a pin before the removal of an input aborts", pin: 1, rebase: true, wantAbort: "snapshot 2 removed input file s3://t/data/a"},
		{name: "a pin that is not an ancestor aborts", pin: 99, rebase: true, wantAbort: "no longer an ancestor"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			scope := noEq(vsScope(t))
			scope.Rebase = c.rebase
			conc, err := ValidateSince(ctx, tbl, messages.Pin{SnapshotID: c.pin}, scope)
			if c.wantAbort != "" {
				if !errors.Is(err, ErrAborted) || !strings.Contains(err.Error(), c.wantAbort) {
					t.Fatalf("err %v, want ErrAborted with %q", err, c.wantAbort)
				}
				return
			}
			if err != nil {
				t.Fatalf("ValidateSince: %v", err)
			}
			var got []string
			for _, d := range conc.Added {
				got = append(got, fileKey(d))
			}
			if !slices.Equal(got, c.wantAdded) {
				t.Errorf("rebase gets %v, want %v", got, c.wantAdded)
			}
			if conc.Empty() != (len(c.wantAdded) == 0) {
				t.Errorf("Empty() = %v with %v", conc.Empty(), got)
			}
		})
	}
}

// TestValidateSince_KeepsEachSnapshotsOutcomeAcrossRounds: with a seen map,
// a later round examines only the snapshots new to it, and still returns
// what every snapshot since the pin added.
func TestValidateSince_KeepsEachSnapshotsOutcomeAcrossRounds(t *testing.T) {
	dir := t.TempDir()
	p := func(v int64) *int64 { return &v }
	s1, m1 := writeSnapshot(t, dir, 1, 1, nil, []vsEntry{added(data("s3://t/data/a", "eu"))}, nil)
	s2, m2 := writeSnapshot(t, dir, 2, 2, p(1), []vsEntry{added(vsFile{content: iceberg.EntryContentPosDeletes, path: "s3://t/del/p2", region: "eu", ref: "s3://t/data/a"})}, m1)
	s3, _ := writeSnapshot(t, dir, 3, 3, p(2), []vsEntry{added(vsFile{content: iceberg.EntryContentPosDeletes, path: "s3://t/del/p3", region: "eu", ref: "s3://t/data/b"})}, m2)
	scope := vsScope(t)
	scope.Rebase, scope.EqualityRemoved = true, nil
	seen := map[int64]Concurrent{}
	var first Concurrent
	if err := validateSince(context.Background(), vsTable(t, dir, []*table.Snapshot{s1, s2}), messages.Pin{SnapshotID: 1}, scope, &first, seen); err != nil {
		t.Fatal(err)
	}
	// Make snapshot 2's manifests unreadable: a second round must not
	// read them again.
	if err := os.Remove(s2.ManifestList); err != nil {
		t.Fatal(err)
	}
	var second Concurrent
	if err := validateSince(context.Background(), vsTable(t, dir, []*table.Snapshot{s1, s2, s3}), messages.Pin{SnapshotID: 1}, scope, &second, seen); err != nil {
		t.Fatalf("second round: %v", err)
	}
	var got []string
	for _, d := range second.Added {
		got = append(got, d.FilePath())
	}
	if want := []string{"s3://t/del/p3", "s3://t/del/p2"}; !slices.Equal(got, want) {
		t.Errorf("second round rebases %v, want %v", got, want)
	}
}

// TestEqualityBelow_StrictlyLowerSequenceInItsPartitionOrGlobal: spec,
// "Scan Planning": an equality delete applies to a data file whose data
// sequence number is strictly less than its own, in its partition, or in
// every partition when its spec is unpartitioned (key "").
func TestEqualityBelow_StrictlyLowerSequenceInItsPartitionOrGlobal(t *testing.T) {
	cases := []struct {
		name    string
		removed map[string]int64
		part    string
		seq     int64
		wantEq  int64
		want    bool
	}{
		{"below, same partition", map[string]int64{"p": 5}, "p", 4, 5, true},
		{"equal, same partition", map[string]int64{"p": 5}, "p", 5, 0, false},
		{"above, same partition", map[string]int64{"p": 5}, "p", 6, 0, false},
		{"below, another partition", map[string]int64{"p": 5}, "q", 1, 0, false},
		{"below a global one, any partition", map[string]int64{"": 5}, "q", 4, 5, true},
		{"equal to a global one", map[string]int64{"": 5}, "q", 5, 0, false},
		{"the partition's is not below, the global one is", map[string]int64{"p": 3, "": 8}, "p", 4, 8, true},
		{"nothing removed", nil, "p", 0, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			eq, ok := equalityBelow(c.removed, c.part, c.seq)
			if ok != c.want || eq != c.wantEq {
				t.Errorf("equalityBelow = %d, %v; want %d, %v", eq, ok, c.wantEq, c.want)
			}
		})
	}
}

// TestMayTarget_ByReferenceThenBoundsThenPartition: which rewritten file
// a position delete added since the pin may delete rows of: the one its
// referenced_data_file (or equal file_path bounds) names; any input within
// its file_path bounds; without either, any input of its partition.
func TestMayTarget_ByReferenceThenBoundsThenPartition(t *testing.T) {
	scope := vsScope(t)
	cases := []struct {
		name       string
		f          vsFile
		wantTarget string
		want       bool
	}{
		{"referenced input", vsFile{ref: "s3://t/data/a", region: "eu"}, "s3://t/data/a", true},
		{"referenced file left alone", vsFile{ref: "s3://t/data/c", region: "eu"}, "s3://t/data/c", false},
		{"the reference wins over bounds", vsFile{ref: "s3://t/data/c", lo: "s3://t/data/a", hi: "s3://t/data/b", region: "eu"}, "s3://t/data/c", false},
		{"equal bounds name an input", vsFile{lo: "s3://t/data/b", hi: "s3://t/data/b", region: "eu"}, "s3://t/data/b", true},
		{"the lower bound is inclusive", vsFile{lo: "s3://t/data/b", hi: "s3://t/data/z", region: "eu"}, "s3://t/data/b", true},
		{"the upper bound is inclusive", vsFile{lo: "s3://t/data/0", hi: "s3://t/data/a", region: "eu"}, "s3://t/data/a", true},
		{"bounds past every input", vsFile{lo: "s3://t/data/b0", hi: "s3://t/data/z", region: "eu"}, "", false},
		{"bounds win over the partition", vsFile{lo: "s3://t/data/c", hi: "s3://t/data/d", region: "eu"}, "", false},
		{"no bounds, a rewritten partition", vsFile{region: "eu"}, "", true},
		{"no bounds, another partition", vsFile{region: "us"}, "", false},
		{"no bounds, unpartitioned", vsFile{}, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.f.content, c.f.path = iceberg.EntryContentPosDeletes, "s3://t/del/p"
			target, ok := mayTarget(c.f.build(t), deletefiles.PathFieldID, scope)
			if target != c.wantTarget || ok != c.want {
				t.Errorf("mayTarget = %q, %v; want %q, %v", target, ok, c.wantTarget, c.want)
			}
		})
	}
}

// TestPathBounds_NeedBothBounds: a delete file's file_path bounds count
// only when both are there; referencedPath reads equal ones as a
// reference.
func TestPathBounds_NeedBothBounds(t *testing.T) {
	build := func(lo, hi map[int][]byte) iceberg.DataFile {
		b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentPosDeletes, "s3://t/del/p", iceberg.ParquetFile, nil, nil, nil, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		return b.LowerBoundValues(lo).UpperBoundValues(hi).Build()
	}
	id := deletefiles.PathFieldID
	cases := []struct {
		name       string
		lo, hi     map[int][]byte
		wantOK     bool
		wantLo     string
		wantHi     string
		wantTarget string
	}{
		{"both", map[int][]byte{id: []byte("a")}, map[int][]byte{id: []byte("c")}, true, "a", "c", ""},
		{"equal", map[int][]byte{id: []byte("b")}, map[int][]byte{id: []byte("b")}, true, "b", "b", "b"},
		{"lower only", map[int][]byte{id: []byte("a")}, nil, false, "", "", ""},
		{"upper only", nil, map[int][]byte{id: []byte("c")}, false, "", "", ""},
		{"another column's", map[int][]byte{id - 1: []byte("a")}, map[int][]byte{id - 1: []byte("a")}, false, "", "", ""},
		{"empty", map[int][]byte{id: {}}, map[int][]byte{id: []byte("c")}, false, "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			df := build(c.lo, c.hi)
			lo, hi, ok := pathBounds(df, id)
			if ok != c.wantOK || lo != c.wantLo || hi != c.wantHi {
				t.Errorf("pathBounds = %q, %q, %v; want %q, %q, %v", lo, hi, ok, c.wantLo, c.wantHi, c.wantOK)
			}
			if got := referencedPath(df, id); got != c.wantTarget {
				t.Errorf("referencedPath = %q, want %q", got, c.wantTarget)
			}
		})
	}
}
