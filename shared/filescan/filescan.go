// Package filescan plans a snapshot's file scan tasks from its manifests,
// as iceberg-go's Scan.PlanFiles does for a scan without a filter, while
// holding for each file only what planning needs: the planner's compaction
// and delete-file rewrite, and health's compaction plan.
//
// Why: PlanFiles keeps every live file's complete metadata, column
// statistics included: about 2.8 KB per file of a 4-column table, so a
// million files did not fit a 1 GB planner (docs/PERFORMANCE.md, "Planner
// at 1,000,000 files"). Plan reads the manifests without statistics (the
// bounds of the columns asked for aside, for sort and z-order planning)
// and keeps a small File per data and delete file, with the partition
// tuples shared.
//
// Invariants (the differential harness compares Plan with PlanFiles after
// every step of its random evolved v2 and v3 histories, with every kind of
// delete: tests/scanplanning_test.go; match_test.go checks each rule at
// its edges):
//   - the same data files: every live data file of the snapshot with rows,
//     one whole-file task each (PlanFiles splits large files at row
//     groups; compaction rewrites whole files), in manifest-list order;
//   - the same position delete files and deletion vectors on each task: a
//     deletion vector applies to the file it references when the file's
//     data sequence number is not above its own, and then no position
//     delete file applies (spec: "Scan Planning"); a position delete file
//     applies to the files of its partition whose data sequence number is
//     not above its own and whose path its file_path bounds admit, or only
//     to the file it references;
//   - equality deletes by the spec's rule: a delete applies to a data file
//     whose data sequence number is strictly lower, of the same spec and
//     partition, or to every file when its spec is unpartitioned. PlanFiles
//     also drops the equality deletes that column statistics show cannot
//     match a file; Plan does not read those statistics, so it attaches a
//     superset. An equality delete that matches no row of a file deletes
//     nothing from it, so a task reads the same rows either way; what the
//     extra ones cost is reading them.
//
// A File implements iceberg.DataFile and encodes (iceberg.AvroEntryMarshaler,
// what codec.EncodeFileScanTask needs) as a data file with the fields it
// keeps: everything but the column statistics it was not asked to keep and
// the split offsets. Readers of the tasks need none of those.
package filescan

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"maps"
	"math"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"golang.org/x/sync/errgroup"
)

// PathFieldID is the reserved field id of a position delete file's
// file_path column (spec: "Position Delete Files").
const PathFieldID = 2147483546

// Options say what Plan keeps beyond what every task needs.
type Options struct {
	// Bounds are the field ids whose lower and upper bounds the data files
	// keep (a sort key's or the z-order columns); nil keeps none, and then
	// the data manifests are read without any statistics.
	Bounds []int
	// EqualityColumnSizes: a data file that equality deletes apply to keeps
	// the column sizes of their equality field ids (ColumnSizes), for
	// weighing converting the deletes against rewriting the file (package
	// plan, the delete-file rewrite). When the snapshot has equality
	// deletes, the data manifests are then read with every statistic
	// (iceberg-go's projected reader never reads column sizes), which costs
	// decoding time, not memory: only those sizes are kept.
	EqualityColumnSizes bool
	// Concurrency is how many manifests are read at once; 0 means eight, or
	// GOMAXPROCS when that is more (reads are mostly waiting on S3).
	Concurrency int
	// AddedSince, when not zero, marks the data files added at or after
	// it (File.AddedSince): those whose adding snapshot, the one their
	// manifest entry names, was committed then or later. A file whose
	// adding snapshot is no longer in the metadata (expired) is dated by
	// the earliest snapshot still there whose sequence number is not
	// below the file's sequence number: the adding snapshot was committed
	// no later than that one, so the file is marked whenever it might be
	// young. It costs no memory: the mark fits in File's padding.
	AddedSince time.Time
}

// Plan returns the snapshot's file scan tasks (see the package comment for
// how they compare with iceberg-go's PlanFiles).
func Plan(ctx context.Context, meta table.Metadata, snap *table.Snapshot, fs iceio.IO, opts Options) ([]table.FileScanTask, error) {
	manifests, err := snap.Manifests(fs)
	if err != nil {
		return nil, fmt.Errorf("filescan: read manifest list of snapshot %d: %w", snap.SnapshotID, err)
	}
	var data, deletes []iceberg.ManifestFile
	minSeq := int64(math.MaxInt64)
	for _, m := range manifests {
		if m.ManifestContent() == iceberg.ManifestContentDeletes {
			deletes = append(deletes, m)
			continue
		}
		data = append(data, m)
		minSeq = min(minSeq, m.MinSequenceNum())
	}
	if minSeq == math.MaxInt64 {
		minSeq = 0
	}
	// A delete manifest older than every data manifest holds no delete
	// with a sequence number a live data file could be below (PlanFiles
	// skips it the same way).
	deletes = slices.DeleteFunc(deletes, func(m iceberg.ManifestFile) bool { return m.SequenceNum() < minSeq })

	s := &scanner{meta: meta, fs: fs, opts: opts, parts: map[string]*tuple{}, seqs: map[int64]*int64{}}
	if !opts.AddedSince.IsZero() {
		s.added = newAddedIndex(meta, opts.AddedSince)
	}
	if s.opts.Concurrency <= 0 {
		s.opts.Concurrency = max(8, runtime.GOMAXPROCS(0))
	}
	idx, err := s.readDeletes(ctx, deletes)
	if err != nil {
		return nil, err
	}
	return s.readData(ctx, data, idx)
}

type scanner struct {
	meta table.Metadata
	fs   iceio.IO
	opts Options

	mu    sync.Mutex
	parts map[string]*tuple // interned partition tuples, by key
	seqs  map[int64]*int64  // interned data sequence numbers

	added *addedIndex // nil: Options.AddedSince not set
}

// addedIndex dates data files by their adding snapshot (Options.AddedSince).
type addedIndex struct {
	since int64           // ms
	byID  map[int64]int64 // snapshot id -> committed at, ms
	// bySeq are the snapshots by sequence number, each with the earliest
	// commit time of it and every later one (a bound for an expired
	// snapshot of a lower sequence number).
	bySeq []seqTime
}

type seqTime struct{ seq, ms int64 }

func newAddedIndex(meta table.Metadata, since time.Time) *addedIndex {
	a := &addedIndex{since: since.UnixMilli(), byID: map[int64]int64{}}
	for _, snap := range meta.Snapshots() {
		a.byID[snap.SnapshotID] = snap.TimestampMs
		a.bySeq = append(a.bySeq, seqTime{snap.SequenceNumber, snap.TimestampMs})
	}
	slices.SortFunc(a.bySeq, func(x, y seqTime) int { return cmp.Or(cmp.Compare(x.seq, y.seq), cmp.Compare(x.ms, y.ms)) })
	for i := len(a.bySeq) - 2; i >= 0; i-- {
		a.bySeq[i].ms = min(a.bySeq[i].ms, a.bySeq[i+1].ms)
	}
	return a
}

// young reports whether the entry's file was, or may have been, added at
// or after since.
func (a *addedIndex) young(e iceberg.ManifestEntry) bool {
	if ms, ok := a.byID[e.SnapshotID()]; ok {
		return ms >= a.since
	}
	fseq := e.FileSequenceNum()
	if fseq == nil {
		return false // a v1 table's expired snapshot: older than what is kept
	}
	i := sort.Search(len(a.bySeq), func(i int) bool { return a.bySeq[i].seq >= *fseq })
	if i == len(a.bySeq) {
		return true // nothing to date it by: take it for young
	}
	return a.bySeq[i].ms >= a.since
}

// entry is one delete file with the sequence number of its entry.
type entry struct {
	file *File
	seq  int64
}

// deleteIndex is PlanFiles' three delete indexes (positional, DV,
// equality), over Files.
type deleteIndex struct {
	posByPath map[string][]entry
	posByPart map[string][]entry
	dvs       map[string]entry
	eqGlobal  []entry
	eqByPart  map[string][]entry
}

func (s *scanner) readDeletes(ctx context.Context, manifests []iceberg.ManifestFile) (*deleteIndex, error) {
	perManifest := make([][]entry, len(manifests))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.opts.Concurrency)
	for i, m := range manifests {
		g.Go(func() error {
			// The file_path bounds and counts decide which files a position
			// delete file names.
			for e, err := range iceberg.EntriesWithProjection(s.fs, m, true, iceberg.ManifestEntryProjection{IncludePruningStats: true}) {
				if err != nil {
					return fmt.Errorf("filescan: read delete manifest %s: %w", m.FilePath(), err)
				}
				if err := gctx.Err(); err != nil {
					return err
				}
				df := e.DataFile()
				if df.Count() == 0 { // PlanFiles' metrics evaluator skips empty files
					continue
				}
				if df.ContentType() == iceberg.EntryContentData {
					return fmt.Errorf("filescan: %w: delete manifest %s holds data file %s", table.ErrInvalidMetadata, m.FilePath(), df.FilePath())
				}
				perManifest[i] = append(perManifest[i], entry{file: s.deleteFile(df), seq: e.SequenceNum()})
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return s.index(slices.Concat(perManifest...))
}

// index builds the delete indexes from the delete files in manifest order.
func (s *scanner) index(deletes []entry) (*deleteIndex, error) {
	idx := &deleteIndex{posByPath: map[string][]entry{}, posByPart: map[string][]entry{}, dvs: map[string]entry{}, eqByPart: map[string][]entry{}}
	unpartitioned := map[int32]bool{}
	for _, e := range deletes {
		f := e.file
		switch {
		case f.content == iceberg.EntryContentPosDeletes && f.format == iceberg.PuffinFile:
			if f.ext == nil || f.ext.ref == "" {
				continue // PlanFiles indexes a DV by the file it references only
			}
			if _, dup := idx.dvs[f.ext.ref]; dup {
				return nil, fmt.Errorf("filescan: can't index multiple deletion vectors for %s", f.ext.ref)
			}
			idx.dvs[f.ext.ref] = e
		case f.content == iceberg.EntryContentPosDeletes:
			if ref := referencedPath(f); ref != "" {
				idx.posByPath[ref] = append(idx.posByPath[ref], e)
			} else {
				idx.posByPart[f.partKey] = append(idx.posByPart[f.partKey], e)
			}
		default:
			u, ok := unpartitioned[f.spec]
			if !ok {
				spec := s.meta.PartitionSpecByID(int(f.spec))
				if spec == nil {
					return nil, fmt.Errorf("filescan: equality delete file %s: %w: id %d", f.path, table.ErrPartitionSpecNotFound, f.spec)
				}
				u = spec.IsUnpartitioned()
				unpartitioned[f.spec] = u
			}
			if u {
				idx.eqGlobal = append(idx.eqGlobal, e)
			} else {
				idx.eqByPart[f.partKey] = append(idx.eqByPart[f.partKey], e)
			}
		}
	}
	bySeq := func(es []entry) {
		slices.SortStableFunc(es, func(a, b entry) int { return cmp.Compare(a.seq, b.seq) })
	}
	for _, es := range idx.posByPath {
		bySeq(es)
	}
	for _, es := range idx.posByPart {
		bySeq(es)
	}
	bySeq(idx.eqGlobal)
	for _, es := range idx.eqByPart {
		bySeq(es)
	}
	return idx, nil
}

func (s *scanner) readData(ctx context.Context, manifests []iceberg.ManifestFile, idx *deleteIndex) ([]table.FileScanTask, error) {
	// One buffer sized from the manifest list's counts, each manifest
	// filling its own region, so that a million tasks are not copied from
	// per-manifest slices (a manifest that holds more than it counts gets
	// its own slice, and the result is then assembled by appending).
	offsets, caps := make([]int, len(manifests)), make([]int, len(manifests))
	total, counted := 0, true
	for i, m := range manifests {
		n := int(m.AddedDataFiles()) + int(m.ExistingDataFiles())
		if m.AddedDataFiles() < 0 || m.ExistingDataFiles() < 0 {
			counted = false
			break
		}
		offsets[i], caps[i] = total, n
		total += n
	}
	var buf []table.FileScanTask
	if counted {
		buf = make([]table.FileScanTask, total)
	}
	perManifest := make([][]table.FileScanTask, len(manifests))
	proj := iceberg.ManifestEntryProjection{IncludePruningStats: len(s.opts.Bounds) > 0}
	sizes := s.opts.EqualityColumnSizes && (len(idx.eqGlobal) > 0 || len(idx.eqByPart) > 0)
	entries := func(m iceberg.ManifestFile) iter.Seq2[iceberg.ManifestEntry, error] {
		if sizes {
			return m.Entries(s.fs, true)
		}
		return iceberg.EntriesWithProjection(s.fs, m, true, proj)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.opts.Concurrency)
	for i, m := range manifests {
		g.Go(func() error {
			var tasks []table.FileScanTask
			if counted {
				tasks = buf[offsets[i] : offsets[i] : offsets[i]+caps[i]]
			}
			for e, err := range entries(m) {
				if err != nil {
					return fmt.Errorf("filescan: read data manifest %s: %w", m.FilePath(), err)
				}
				if err := gctx.Err(); err != nil {
					return err
				}
				df := e.DataFile()
				if df.ContentType() != iceberg.EntryContentData {
					return fmt.Errorf("filescan: %w: data manifest %s holds %s file %s", table.ErrInvalidMetadata, m.FilePath(), df.ContentType(), df.FilePath())
				}
				if df.Count() == 0 {
					continue
				}
				tasks = append(tasks, s.task(e, idx))
			}
			perManifest[i] = tasks
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	inPlace := counted
	for i, ts := range perManifest {
		if len(ts) > caps[i] {
			inPlace = false
		}
	}
	if inPlace {
		w := 0
		for i, ts := range perManifest {
			w += copy(buf[w:], buf[offsets[i]:offsets[i]+len(ts)])
			perManifest[i] = nil
		}
		clear(buf[w:])
		return buf[:w:w], nil
	}
	n := 0
	for _, ts := range perManifest {
		n += len(ts)
	}
	out := make([]table.FileScanTask, 0, n)
	for i, ts := range perManifest {
		out = append(out, ts...)
		perManifest[i] = nil
	}
	return out, nil
}

// task is the scan task of one live data entry, with the deletes that
// apply to it.
func (s *scanner) task(e iceberg.ManifestEntry, idx *deleteIndex) table.FileScanTask {
	f := s.dataFile(e.DataFile())
	if s.added != nil {
		f.young = s.added.young(e)
	}
	seq := e.SequenceNum()
	t := table.FileScanTask{File: f, Start: 0, Length: f.size}
	if dv, ok := idx.dvs[f.path]; ok && (dv.seq < 0 || seq <= dv.seq) {
		t.DeletionVectorFiles = []iceberg.DataFile{dv.file}
	} else {
		t.DeleteFiles = positionDeletes(t.DeleteFiles, idx.posByPart[f.partKey], seq, f.path, true)
		t.DeleteFiles = positionDeletes(t.DeleteFiles, idx.posByPath[f.path], seq, f.path, false)
	}
	if len(idx.eqGlobal) > 0 || len(idx.eqByPart) > 0 {
		t.EqualityDeleteFiles = equalityDeletes(t.EqualityDeleteFiles, idx.eqGlobal, seq)
		if len(f.part) > 0 {
			t.EqualityDeleteFiles = equalityDeletes(t.EqualityDeleteFiles, idx.eqByPart[f.partKey], seq)
		}
		if s.opts.EqualityColumnSizes && len(t.EqualityDeleteFiles) > 0 {
			f.keepColumnSizes(e.DataFile().ColumnSizes(), t.EqualityDeleteFiles)
		}
	}
	if f.firstRow >= 0 {
		id := f.firstRow
		t.FirstRowID = &id
	}
	if seq >= 0 {
		t.DataSequenceNumber = s.seq(seq)
	}
	return t
}

// positionDeletes appends the position delete files of es (sorted by
// sequence number) not below seq; bounded ones only when their file_path
// bounds admit path.
func positionDeletes(out []iceberg.DataFile, es []entry, seq int64, path string, bounded bool) []iceberg.DataFile {
	start := sort.Search(len(es), func(i int) bool { return es[i].seq >= seq })
	for _, e := range es[start:] {
		if bounded && !e.file.mayName(path) {
			continue
		}
		out = append(out, e.file)
	}
	return out
}

// equalityDeletes appends the equality delete files of es (sorted by
// sequence number) strictly above seq.
func equalityDeletes(out []iceberg.DataFile, es []entry, seq int64) []iceberg.DataFile {
	start := sort.Search(len(es), func(i int) bool { return es[i].seq > seq })
	for _, e := range es[start:] {
		out = append(out, e.file)
	}
	return out
}

func (s *scanner) seq(n int64) *int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.seqs[n]
	if p == nil {
		p = new(int64)
		*p = n
		s.seqs[n] = p
	}
	return p
}

// partition interns a file's partition tuple: the files of one partition
// share one map and one key.
func (s *scanner) partition(spec int32, part map[int]any) (string, map[int]any) {
	key := PartitionKey(spec, part)
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.parts[key]; ok {
		return p.key, p.values
	}
	shared := maps.Clone(part)
	for id, v := range shared {
		if b, ok := v.([]byte); ok {
			shared[id] = slices.Clone(b)
		}
	}
	s.parts[key] = &tuple{key: key, values: shared}
	return key, shared
}

type tuple struct {
	key    string
	values map[int]any
}

// PartitionKey is a partition tuple's identity: its spec and its values by
// field id, typed (two specs never match; within a spec a field's values
// all have one type, as iceberg-go's canonical key assumes).
func PartitionKey(spec int32, part map[int]any) string {
	ids := make([]int, 0, len(part))
	for id := range part {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	b := strconv.AppendInt(make([]byte, 0, 32), int64(spec), 10)
	b = append(b, '|')
	for _, id := range ids {
		b = strconv.AppendInt(b, int64(id), 10)
		b = append(b, ':')
		switch v := part[id].(type) {
		case nil:
			b = append(b, 'z')
		case bool:
			b = strconv.AppendBool(append(b, 'b'), v)
		case int32:
			b = strconv.AppendInt(append(b, 'i'), int64(v), 10)
		case int64:
			b = strconv.AppendInt(append(b, 'i'), v, 10)
		case int:
			b = strconv.AppendInt(append(b, 'i'), int64(v), 10)
		case iceberg.Date:
			b = strconv.AppendInt(append(b, 'i'), int64(v), 10)
		case iceberg.Time:
			b = strconv.AppendInt(append(b, 'i'), int64(v), 10)
		case iceberg.Timestamp:
			b = strconv.AppendInt(append(b, 'i'), int64(v), 10)
		case iceberg.TimestampNano:
			b = strconv.AppendInt(append(b, 'i'), int64(v), 10)
		case string:
			b = strconv.AppendInt(append(b, 's'), int64(len(v)), 10)
			b = append(append(b, ':'), v...)
		case []byte:
			b = strconv.AppendInt(append(b, 'x'), int64(len(v)), 10)
			b = append(append(b, ':'), v...)
		case float32:
			b = strconv.AppendUint(append(b, 'f'), uint64(math.Float32bits(v)), 16)
		case float64:
			b = strconv.AppendUint(append(b, 'd'), math.Float64bits(v), 16)
		default:
			// Decimals, UUIDs and fixed values: their printed form is one
			// per value of a type.
			s := fmt.Sprintf("%T:%v", v, v)
			b = strconv.AppendInt(append(b, 'o'), int64(len(s)), 10)
			b = append(append(b, ':'), s...)
		}
		b = append(b, ';')
	}
	return string(b)
}

func (s *scanner) dataFile(df iceberg.DataFile) *File {
	f := s.file(df)
	if len(s.opts.Bounds) > 0 {
		lo, hi := df.LowerBoundValues(), df.UpperBoundValues()
		var b *fileBounds
		for _, id := range s.opts.Bounds {
			l, lok := lo[id]
			h, hok := hi[id]
			if !lok && !hok {
				continue
			}
			if b == nil {
				b = &fileBounds{lower: map[int][]byte{}, upper: map[int][]byte{}}
			}
			if lok {
				b.lower[id] = slices.Clone(l)
			}
			if hok {
				b.upper[id] = slices.Clone(h)
			}
		}
		f.bounds = b
	}
	return f
}

func (s *scanner) deleteFile(df iceberg.DataFile) *File {
	f := s.file(df)
	if df.ContentType() == iceberg.EntryContentPosDeletes {
		lo, hi := df.LowerBoundValues()[PathFieldID], df.UpperBoundValues()[PathFieldID]
		vc, vok := df.ValueCounts()[PathFieldID]
		nc, nok := df.NullValueCounts()[PathFieldID]
		nan, nanok := df.NaNValueCounts()[PathFieldID]
		none := vok && (nok && nc == vc || nanok && nan == vc)
		if lo != nil || hi != nil || none {
			f.bounds = &fileBounds{lower: map[int][]byte{}, upper: map[int][]byte{}, namesNone: none}
			if lo != nil {
				f.bounds.lower[PathFieldID] = slices.Clone(lo)
			}
			if hi != nil {
				f.bounds.upper[PathFieldID] = slices.Clone(hi)
			}
		}
	}
	return f
}

func (s *scanner) file(df iceberg.DataFile) *File {
	key, part := s.partition(df.SpecID(), df.Partition())
	f := &File{
		path: df.FilePath(), partKey: key, part: part, count: df.Count(), size: df.FileSizeBytes(),
		spec: df.SpecID(), content: df.ContentType(), format: df.FileFormat(), sortOrder: -1, firstRow: -1,
	}
	if id := df.SortOrderID(); id != nil {
		f.sortOrder = int32(*id)
	}
	if id := df.FirstRowID(); id != nil {
		f.firstRow = *id
	}
	var ext extra
	if ids := df.EqualityFieldIDs(); len(ids) > 0 {
		ext.equalityIDs = slices.Clone(ids)
	}
	if ref := df.ReferencedDataFile(); ref != nil {
		ext.ref = *ref
	}
	if off := df.ContentOffset(); off != nil {
		ext.offset, ext.hasOffset = *off, true
	}
	if n := df.ContentSizeInBytes(); n != nil {
		ext.length, ext.hasLength = *n, true
	}
	if k := df.KeyMetadata(); len(k) > 0 {
		ext.keyMetadata = slices.Clone(k)
	}
	if ext.equalityIDs != nil || ext.ref != "" || ext.hasOffset || ext.hasLength || ext.keyMetadata != nil {
		f.ext = &ext
	}
	return f
}

// referencedPath is the one data file a position delete file names:
// referenced_data_file, or equal file_path bounds (Iceberg's
// ContentFileUtil.referencedDataFile, as PlanFiles indexes them).
func referencedPath(f *File) string {
	if f.ext != nil && f.ext.ref != "" {
		return f.ext.ref
	}
	if f.bounds == nil {
		return ""
	}
	lo, hi := f.bounds.lower[PathFieldID], f.bounds.upper[PathFieldID]
	if len(lo) == 0 || string(lo) != string(hi) {
		return ""
	}
	return string(lo)
}
