// Package pruning estimates what a query reads from a set of live files,
// given only what an engine prunes with: the files' partitions and the
// lower and upper bounds of their columns in the manifests. It is how
// icekeeper tells what a rewrite saved the table's readers (the ledger)
// and how the tests show that sorting and z-ordering help pruning.
//
// Model:
//   - A full scan opens every data file and reads every byte.
//   - A point lookup on a column, with no partition filter, opens the
//     files whose [lower, upper] range holds the value, plus every file
//     without bounds on it; its cost is the mean over probe values, one at
//     each file's lower bound (values the table holds), as health's
//     point-lookup figures are (those per partition).
//   - A query that opens a share of a partition's data files reads the
//     same share of the partition's delete files (files and bytes).
//
// Invariant: a file is pruned only when its bounds prove that no row can
// match; missing or unreadable bounds mean the file is read.
package pruning

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/bounds"
	"github.com/icekeeper/icekeeper/shared/messages"
)

// Read is what one query opens and reads.
type Read struct {
	Files float64 `json:"files"`
	Bytes float64 `json:"bytes"`
}

// Plus adds o to r.
func (r Read) Plus(o Read) Read { return Read{Files: r.Files + o.Files, Bytes: r.Bytes + o.Bytes} }

// Change is one query's read before and after a rewrite.
type Change struct {
	Before Read `json:"before"`
	After  Read `json:"after"`
}

// Saved is what the rewrite saved the query (negative when it reads more).
func (c Change) Saved() Read {
	return Read{Files: c.Before.Files - c.After.Files, Bytes: c.Before.Bytes - c.After.Bytes}
}

// Reads are a rewrite's effect on the queries of the partitions it
// touched: a full scan of them, and a point lookup on each column with
// bounds, before (at the pinned snapshot) and after (the committed files,
// without what other writers added meanwhile).
type Reads struct {
	Partitions int `json:"partitions"`
	// TableBytes are the live data bytes of the whole table at the pin:
	// the share of a query's bytes that crossed these partitions is taken
	// as their share of the table.
	TableBytes int64             `json:"table_bytes"`
	FullScan   Change            `json:"full_scan"`
	Lookups    map[string]Change `json:"point_lookup,omitempty"`
}

// Layout is the live files of a snapshot in chosen partitions, with their
// bounds on the table's columns.
type Layout struct {
	columns []column
	parts   map[string]*partition
	// TableBytes are the live data bytes of every partition, kept or not.
	TableBytes int64
}

type column struct {
	name string
	id   int
	typ  iceberg.Type
	kind bounds.Kind
}

type partition struct {
	files       []file
	deleteFiles int
	deleteBytes int64
}

type file struct {
	size   int64
	ranges []bounds.Range // by column index
	has    []bool
}

// Keep chooses the files Collect takes: e is the file's manifest entry.
type Keep func(e iceberg.ManifestEntry) bool

// Collect reads snap's manifests and keeps the files keep accepts (nil:
// all), with their bounds on up to MaxColumns top-level columns of an
// orderable type.
func Collect(ctx context.Context, tbl *table.Table, snap *table.Snapshot, keep Keep) (*Layout, error) {
	l := &Layout{parts: map[string]*partition{}}
	meta := tbl.Metadata()
	schema := meta.CurrentSchema()
	addColumn := func(f iceberg.NestedField) {
		k := bounds.KindOf(f.Type)
		if k == 0 || len(l.columns) >= MaxColumns || slices.ContainsFunc(l.columns, func(c column) bool { return c.id == f.ID }) {
			return
		}
		l.columns = append(l.columns, column{name: f.Name, id: f.ID, typ: f.Type, kind: k})
	}
	for _, sf := range meta.SortOrder().Fields() {
		for _, id := range sf.SourceIDs {
			// Top-level columns only: a nested field's name is not what a
			// query filter names.
			if f, ok := schema.FindFieldByID(id); ok && slices.ContainsFunc(schema.Fields(), func(g iceberg.NestedField) bool { return g.ID == id }) {
				addColumn(f)
			}
		}
	}
	for _, f := range schema.Fields() {
		addColumn(f)
	}
	if snap == nil {
		return l, nil
	}
	err := eachEntry(ctx, tbl, snap, true, func(e iceberg.ManifestEntry) {
		df := e.DataFile()
		if df.ContentType() == iceberg.EntryContentData {
			l.TableBytes += df.FileSizeBytes()
		}
		if keep == nil || keep(e) {
			l.add(df)
		}
	})
	if err != nil {
		return nil, err
	}
	return l, nil
}

func (l *Layout) add(df iceberg.DataFile) {
	key := messages.PartitionKey(df)
	p := l.parts[key]
	if p == nil {
		p = &partition{}
		l.parts[key] = p
	}
	if df.ContentType() != iceberg.EntryContentData {
		p.deleteFiles++
		p.deleteBytes += df.FileSizeBytes()
		return
	}
	f := file{size: df.FileSizeBytes(), ranges: make([]bounds.Range, len(l.columns)), has: make([]bool, len(l.columns))}
	if lo, hi := df.LowerBoundValues(), df.UpperBoundValues(); len(lo) > 0 && len(hi) > 0 {
		for i, c := range l.columns {
			f.ranges[i], f.has[i] = bounds.InMaps(lo, hi, c.id, c.kind, c.typ)
		}
	}
	p.files = append(p.files, f)
}

// Partitions is the number of partitions with kept files.
func (l *Layout) Partitions() int { return len(l.parts) }

// Columns are the columns the layout has bounds for, in schema order.
func (l *Layout) Columns() []string {
	out := make([]string, len(l.columns))
	for i, c := range l.columns {
		out[i] = c.name
	}
	return out
}

// FullScan is what a query reading every kept partition whole reads.
func (l *Layout) FullScan() Read {
	var r Read
	for _, p := range l.parts {
		r = r.Plus(p.read(float64(len(p.files)), total(p.files)))
	}
	return r
}

// PointLookup is what a lookup of one value of the column reads from the
// kept partitions, on average, for a query with no partition filter: the
// probes are the kept files' lower bounds, each file is opened for the
// probes its range holds (for all of them without bounds), and a
// partition's deletes are read in the share of its files opened.
func (l *Layout) PointLookup(name string) (Read, bool) {
	i := slices.IndexFunc(l.columns, func(c column) bool { return c.name == name })
	if i < 0 {
		return Read{}, false
	}
	k := l.columns[i].kind
	var probes []bounds.Value
	for _, p := range l.parts {
		for _, f := range p.files {
			if f.has[i] {
				probes = append(probes, f.ranges[i].Lo)
			}
		}
	}
	if len(probes) == 0 {
		return l.FullScan(), true
	}
	slices.SortFunc(probes, func(a, b bounds.Value) int { return bounds.Compare(k, a, b) })
	n := float64(len(probes))
	var r Read
	for _, p := range l.parts {
		var hits, bytes float64
		for _, f := range p.files {
			h := n
			if f.has[i] {
				from := sort.Search(len(probes), func(j int) bool { return bounds.Compare(k, probes[j], f.ranges[i].Lo) >= 0 })
				to := sort.Search(len(probes), func(j int) bool { return bounds.Compare(k, probes[j], f.ranges[i].Hi) > 0 })
				h = float64(to - from)
			}
			hits += h
			bytes += h * float64(f.size)
		}
		r = r.Plus(p.read(hits/n, bytes/n))
	}
	return r, true
}

// Predicate is a closed range [Lo, Hi] on one column (Lo = Hi: a point).
type Predicate struct {
	Column string
	Lo, Hi bounds.Value
}

// Touched is what a query with every predicate (a conjunction) reads: the
// files whose bounds cannot rule out a match, and their share of deletes.
func (l *Layout) Touched(preds ...Predicate) (Read, error) {
	idx := make([]int, len(preds))
	for j, pr := range preds {
		idx[j] = slices.IndexFunc(l.columns, func(c column) bool { return c.name == pr.Column })
		if idx[j] < 0 {
			return Read{}, fmt.Errorf("pruning: no bounds are kept for column %q", pr.Column)
		}
	}
	var r Read
	for _, p := range l.parts {
		var files float64
		var bytes int64
		for _, f := range p.files {
			match := true
			for j, pr := range preds {
				i := idx[j]
				k := l.columns[i].kind
				if f.has[i] && (bounds.Compare(k, f.ranges[i].Hi, pr.Lo) < 0 || bounds.Compare(k, f.ranges[i].Lo, pr.Hi) > 0) {
					match = false
					break
				}
			}
			if match {
				files++
				bytes += f.size
			}
		}
		r = r.Plus(p.read(files, float64(bytes)))
	}
	return r, nil
}

// read is what opening files data files of bytes reads in p, with their
// share of the partition's deletes.
func (p *partition) read(files, bytes float64) Read {
	r := Read{Files: files, Bytes: bytes}
	if n := len(p.files); n > 0 && p.deleteFiles > 0 {
		share := files / float64(n)
		r.Files += share * float64(p.deleteFiles)
		r.Bytes += share * float64(p.deleteBytes)
	} else if n == 0 {
		// Deletes whose data files are all gone are still planned (until
		// an expiry or rewrite drops them): a scan reads them.
		r.Files += float64(p.deleteFiles)
		r.Bytes += float64(p.deleteBytes)
	}
	return r
}

func total(fs []file) float64 {
	var n int64
	for _, f := range fs {
		n += f.size
	}
	return float64(n)
}

// Overlap returns the largest number of ranges of kind k that share a
// value (ranges are closed: [a,b] and [b,c] share b) and the mean, over
// probes at the ranges' lower ends, of the number of ranges holding the
// probe.
func Overlap(k bounds.Kind, ranges []bounds.Range) (depth int, lookup float64) {
	if len(ranges) == 0 {
		return 0, 0
	}
	los := make([]bounds.Value, len(ranges))
	his := make([]bounds.Value, len(ranges))
	for i, r := range ranges {
		los[i], his[i] = r.Lo, r.Hi
	}
	less := func(a, b bounds.Value) int { return bounds.Compare(k, a, b) }
	slices.SortFunc(los, less)
	slices.SortFunc(his, less)
	// Sweep: at each lower end, the ranges open are those started at or
	// before it minus those ended strictly before it.
	total := 0
	for _, x := range los {
		started := sort.Search(len(los), func(j int) bool { return bounds.Compare(k, los[j], x) > 0 })
		ended := sort.Search(len(his), func(j int) bool { return bounds.Compare(k, his[j], x) >= 0 })
		open := started - ended
		total += open
		depth = max(depth, open)
	}
	return depth, float64(total) / float64(len(ranges))
}

// MaxColumns bounds the columns a layout keeps bounds of (two per file
// each, while it is held): the sort order's first, then schema order.
const MaxColumns = 16

// Rewrite names a committed rewrite for Compare.
type Rewrite struct {
	// Inputs are the data files it replaced or rewrote deletes of.
	Inputs map[string]bool
	// Snapshots are the snapshots it committed, and SequenceNumber the
	// pin's data sequence number (its new files carry it).
	Snapshots      map[int64]bool
	SequenceNumber int64
	// MaxBytes bounds the memory a layout may take (0: no bound): it
	// holds every data file of the touched partitions with its bounds,
	// on an unpartitioned table every file of the table. Compare counts the
	// files first and returns ErrTooLarge rather than run the caller out of
	// memory.
	MaxBytes int64
}

// ErrTooLarge: the layout Compare would hold exceeds Rewrite.MaxBytes.
var ErrTooLarge = errors.New("pruning: the touched partitions are too large to measure in the memory given")

// layoutFileBytes is what a Layout holds per data file (the file, its
// slices' headers, one range and flag per column, string bounds' bytes
// taken at 16 each), an upper estimate for the budget.
func layoutFileBytes(columns int) int64 { return 96 + int64(columns)*(48+1+2*16) }

// Compare measures a committed rewrite's Reads: before, the partitions
// of its inputs at the pinned snapshot; after, the same partitions and
// those of its new files in the committed table, leaving out files other
// writers added meanwhile (data sequence number above the pin's).
func Compare(ctx context.Context, pinned, committed *table.Table, rw Rewrite) (Reads, error) {
	touched := map[string]bool{}
	filesIn := map[string]int64{} // data files per partition
	before := pinned.CurrentSnapshot()
	if before != nil {
		if err := eachEntry(ctx, pinned, before, false, func(e iceberg.ManifestEntry) {
			df := e.DataFile()
			if df.ContentType() != iceberg.EntryContentData {
				return
			}
			key := messages.PartitionKey(df)
			filesIn[key]++
			if rw.Inputs[df.FilePath()] {
				touched[key] = true
			}
		}); err != nil {
			return Reads{}, err
		}
	}
	if rw.MaxBytes > 0 {
		var files int64
		for key := range touched {
			files += filesIn[key]
		}
		columns := min(MaxColumns, len(pinned.Schema().Fields()))
		// One layout is held at a time (below), and after's has about
		// the touched files again (a compaction writes fewer than it
		// reads, a delete-file rewrite keeps them).
		if need := files * layoutFileBytes(columns); need > rw.MaxBytes {
			return Reads{}, fmt.Errorf("%w: %d data files in %d partitions need about %d MiB, %d MiB given", ErrTooLarge, files, len(touched), need>>20, rw.MaxBytes>>20)
		}
	}
	// One layout at a time: before's reads are taken, and its layout
	// dropped, before after's is collected.
	bl, err := Collect(ctx, pinned, before, func(e iceberg.ManifestEntry) bool { return touched[messages.PartitionKey(e.DataFile())] })
	if err != nil {
		return Reads{}, err
	}
	r := Reads{Partitions: bl.Partitions(), TableBytes: bl.TableBytes, FullScan: Change{Before: bl.FullScan()}, Lookups: map[string]Change{}}
	columns := bl.Columns()
	lookups := map[string]Read{}
	for _, c := range columns {
		if b, ok := bl.PointLookup(c); ok {
			lookups[c] = b
		}
	}
	bl = nil
	al, err := Collect(ctx, committed, committed.CurrentSnapshot(), func(e iceberg.ManifestEntry) bool {
		if e.SequenceNum() > rw.SequenceNumber {
			return false
		}
		return touched[messages.PartitionKey(e.DataFile())] || rw.Snapshots[e.SnapshotID()]
	})
	if err != nil {
		return Reads{}, err
	}
	r.FullScan.After = al.FullScan()
	for _, c := range columns {
		b, ok1 := lookups[c]
		a, ok2 := al.PointLookup(c)
		if ok1 && ok2 {
			r.Lookups[c] = Change{Before: b, After: a}
		}
	}
	return r, nil
}

// eachEntry calls fn with every live entry of snap's manifests, read with
// iceberg-go's projected reader: with the bounds (and the value, null and
// NaN counts) when withBounds is true, never the column sizes.
func eachEntry(ctx context.Context, tbl *table.Table, snap *table.Snapshot, withBounds bool, fn func(iceberg.ManifestEntry)) error {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return fmt.Errorf("pruning: open table IO: %w", err)
	}
	manifests, err := snap.Manifests(fs)
	if err != nil {
		return fmt.Errorf("pruning: read manifests of snapshot %d: %w", snap.SnapshotID, err)
	}
	for _, m := range manifests {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("pruning: %w", err)
		}
		for e, err := range iceberg.EntriesWithProjection(fs, m, true, iceberg.ManifestEntryProjection{IncludePruningStats: withBounds}) {
			if err != nil {
				return fmt.Errorf("pruning: read manifest %s: %w", m.FilePath(), err)
			}
			fn(e)
		}
	}
	return nil
}
