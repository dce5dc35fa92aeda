package health

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"
	"golang.org/x/sync/errgroup"

	"github.com/icekeeper/icekeeper/shared/binpack"
	"github.com/icekeeper/icekeeper/shared/expire"
	"github.com/icekeeper/icekeeper/shared/filescan"
	"github.com/icekeeper/icekeeper/shared/optin"
)

// Assess reports the health of tbl's current snapshot as of now, with the
// given thresholds (usually ThresholdsFor(tbl.Properties(), override)).
//
// It reads only metadata through the table's FileIO: the metadata file's
// size (io.StatIO, or by opening it), the current snapshot's manifest list
// and manifests, and, only when some snapshots are expirable, the manifest
// lists of all snapshots. It never writes, and never opens a data or delete
// file.
//
// Recommendations and their estimates:
//
//   - compaction: iceberg-go's compaction plan at the snapshot with
//     th.CompactionConfig() (files below SmallFileBytes, or over DeleteRatio,
//     or with 5 or more delete files, in partitions with at least
//     MinInputFiles such files) has groups. EstimatedFiles and
//     EstimatedBytes are the data files the plan rewrites and their size;
//     the delete files they carry are named in Why.
//   - expire_snapshots: some snapshots are expirable, as iceberg-go's
//     ExpireSnapshots would judge them with the table's retention: not the
//     head of a ref, and neither among a branch's newest MaxSnapshots
//     ancestors nor younger than MaxSnapshotAge (refs' own retention
//     settings win; refs are assumed kept, never aged out). EstimatedFiles
//     are their manifest lists plus the manifests no kept snapshot uses, and
//     EstimatedBytes those manifests' sizes: a lower bound, since data and
//     delete files only they reference are freed too but would need every
//     manifest's entries to count, and manifest list sizes are not read.
//     Not recommended when gc.enabled is false.
//   - rewrite_manifests: the current snapshot has more than MaxManifests
//     data manifests; the estimate is those manifests and their size
//     (delete manifests are left to compaction).
//   - remove_orphans: never from Assess (metadata cannot show files nobody
//     references); see orphans.Find and Report.AddOrphans.
//
// A table without a snapshot gets an empty, healthy report.
func Assess(ctx context.Context, tbl *table.Table, now time.Time, th Thresholds, opts ...AssessOption) (Report, error) {
	var o assessOptions
	for _, opt := range opts {
		opt(&o)
	}
	if tbl == nil {
		return Report{}, errors.New("health: assess: no table")
	}
	if err := th.Validate(); err != nil {
		return Report{}, fmt.Errorf("health: assess: %w", err)
	}
	meta := tbl.Metadata()
	r := Report{
		Table:            strings.Join(tbl.Identifier(), "."),
		MetadataLocation: tbl.MetadataLocation(),
		GeneratedAt:      now.UTC(),
		Thresholds:       th,
		Partitions:       []PartitionHealth{},
		Recommendations:  []Recommendation{},
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return r, fmt.Errorf("health: assess %s: open table IO: %w", r.Table, err)
	}
	if r.MetadataLocation != "" {
		if r.MetadataBytes, err = fileSize(fsys, r.MetadataLocation); err != nil {
			return r, fmt.Errorf("health: assess %s: size of metadata file %s: %w", r.Table, r.MetadataLocation, err)
		}
	}
	for range meta.PreviousFiles() {
		r.PreviousMetadataFiles++
	}

	snaps := meta.Snapshots()
	r.Snapshots = len(snaps)
	if len(snaps) > 0 {
		oldest := snaps[0].TimestampMs
		for _, s := range snaps[1:] {
			oldest = min(oldest, s.TimestampMs)
		}
		at := time.UnixMilli(oldest).UTC()
		r.OldestSnapshotAt = &at
		r.OldestSnapshotAgeSeconds = max(0, int64(now.Sub(at)/time.Second))
	}
	expirable, kept := expirableSnapshots(meta, now, th)
	r.ExpirableSnapshots = len(expirable)

	var plan compaction.Plan
	names := newPartitionNamer(meta)
	if snap := meta.CurrentSnapshot(); snap != nil {
		r.SnapshotID = snap.SnapshotID
		// The column overlaps hold every file's bounds of a few columns
		// until the layout is measured: not for a table too large to plan.
		overlaps := overlapColumns(meta)
		skip, hold, err := o.planningMemory(ctx, tbl, snap, len(overlaps))
		if err != nil {
			return r, fmt.Errorf("health: assess %s: %w", r.Table, err)
		}
		if hold > 0 {
			if err := o.gate.Acquire(ctx, hold); err != nil {
				return r, fmt.Errorf("health: assess %s: wait for %d MB of the memory budget: %w", r.Table, hold>>20, err)
			}
			defer o.gate.Release(hold)
		}
		if skip != "" {
			overlaps = nil
		}
		if err := r.measureLayout(ctx, fsys, snap, tbl.Schema(), overlaps, th, names); err != nil {
			return r, err
		}
		var corrs [][]ColumnCorrelation
		for i := range r.Partitions {
			if p := &r.Partitions[i]; p.overlaps != nil {
				corrs = append(corrs, p.overlaps.correlations())
				p.Columns, p.overlaps = p.overlaps.results(), nil
			}
		}
		r.Columns = tableOverlaps(r.Partitions)
		r.Correlations = tableCorrelations(corrs)
		for _, f := range tbl.SortOrder().Fields() {
			r.SortColumn, _ = tbl.Schema().FindColumnName(f.SourceID())
			break
		}
		if r.CompactionPlanSkipped = skip; skip == "" {
			if plan, err = r.planCompaction(ctx, tbl, snap, th, names); err != nil {
				return r, err
			}
		}
	}
	for i := range r.Partitions {
		p := &r.Partitions[i]
		p.countExcess(th)
		p.finish()
		r.FileStats.plus(p.FileStats)
	}
	r.FileStats.finish()
	sortPartitions(r.Partitions)

	r.Debt = r.debt(th)
	r.Score = r.Debt.Score()

	if rec, ok := compactionRecommendation(plan, th, names); ok {
		r.Recommendations = append(r.Recommendations, rec)
	}
	if rec, ok := sortRecommendation(r, meta); ok {
		r.Recommendations = append(r.Recommendations, rec)
	}
	if len(expirable) > 0 && th.GCEnabled {
		rec, err := expiryRecommendation(ctx, fsys, expirable, kept, len(snaps), th)
		if err != nil {
			return r, fmt.Errorf("health: assess %s: %w", r.Table, err)
		}
		r.Recommendations = append(r.Recommendations, rec)
	}
	if r.DataManifests > th.MaxManifests {
		r.Recommendations = append(r.Recommendations, Recommendation{
			Action: ActionRewriteManifests,
			Why: fmt.Sprintf("the current snapshot has %d data manifests, more than %d; scan planning reads them all, rewriting clusters their entries into few manifests",
				r.DataManifests, th.MaxManifests),
			EstimatedBytes: r.DataManifestBytes,
			EstimatedFiles: r.DataManifests,
		})
	}
	return r, nil
}

// measureLayout reads the snapshot's manifests into r's partitions and
// manifest counts, and the bounds of the overlaps columns (field ids). The
// manifests are read several at a time (on S3 each read is mostly
// waiting), each into its own partitions, merged afterwards in manifest
// order: the same partitions, counts and bounds, in the same order, as
// reading them one after the other.
func (r *Report) measureLayout(ctx context.Context, fsys icebergio.IO, snap *table.Snapshot, schema *iceberg.Schema, overlaps []int, th Thresholds, names *partitionNamer) error {
	manifests, err := snap.Manifests(fsys)
	if err != nil {
		return fmt.Errorf("health: assess %s: read manifest list of snapshot %d: %w", r.Table, snap.SnapshotID, err)
	}
	for _, m := range manifests {
		r.ManifestBytes += m.Length()
		if m.ManifestContent() == iceberg.ManifestContentDeletes {
			r.DeleteManifests++
		} else {
			r.DataManifests++
			r.DataManifestBytes += m.Length()
		}
	}
	// Sizes, counts and kinds (always read), and the bounds when overlaps
	// are measured: not the other column statistics.
	proj := iceberg.ManifestEntryProjection{IncludePruningStats: len(overlaps) > 0}
	perManifest := make([][]*PartitionHealth, len(manifests))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(8, runtime.GOMAXPROCS(0)))
	for i, m := range manifests {
		g.Go(func() error {
			index := map[partitionKey]int{}
			var parts []PartitionHealth
			for e, err := range iceberg.EntriesWithProjection(fsys, m, true, proj) {
				if err != nil {
					return fmt.Errorf("health: assess %s: read manifest %s: %w", r.Table, m.FilePath(), err)
				}
				if err := gctx.Err(); err != nil {
					return err
				}
				df := e.DataFile()
				k := partitionKey{df.SpecID(), names.name(df.SpecID(), df.Partition())}
				j, ok := index[k]
				if !ok {
					j = len(parts)
					index[k] = j
					parts = append(parts, PartitionHealth{Partition: k.name, SpecID: int(k.spec)})
				}
				p := &parts[j]
				p.add(df, th)
				if df.ContentType() == iceberg.EntryContentData && len(overlaps) > 0 {
					if p.overlaps == nil {
						p.overlaps = newOverlapCollector(schema, overlaps)
					}
					p.overlaps.add(df)
				}
			}
			for j := range parts {
				perManifest[i] = append(perManifest[i], &parts[j])
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		return err
	}
	index := map[partitionKey]int{}
	for i, parts := range perManifest {
		for _, lp := range parts {
			k := partitionKey{int32(lp.SpecID), lp.Partition}
			j, ok := index[k]
			if !ok {
				index[k] = len(r.Partitions)
				r.Partitions = append(r.Partitions, *lp)
				continue
			}
			p := &r.Partitions[j]
			p.plus(lp.FileStats)
			switch {
			case lp.overlaps == nil:
			case p.overlaps == nil:
				p.overlaps = lp.overlaps
			default:
				p.overlaps.merge(lp.overlaps)
			}
		}
		perManifest[i] = nil
	}
	return nil
}

type partitionKey struct {
	spec int32
	name string
}

// partition returns the partition of df, adding it if new.
func (r *Report) partition(index map[partitionKey]int, names *partitionNamer, df iceberg.DataFile) *PartitionHealth {
	k := partitionKey{df.SpecID(), names.name(df.SpecID(), df.Partition())}
	i, ok := index[k]
	if !ok {
		i = len(r.Partitions)
		index[k] = i
		r.Partitions = append(r.Partitions, PartitionHealth{Partition: k.name, SpecID: int(k.spec)})
	}
	return &r.Partitions[i]
}

// planCompaction plans the snapshot's files (metadata only) and runs
// iceberg-go's compaction planner on them; it also counts, per partition,
// the files over the delete ratio.
func (r *Report) planCompaction(ctx context.Context, tbl *table.Table, snap *table.Snapshot, th Thresholds, names *partitionNamer) (compaction.Plan, error) {
	// The planner's own scan planning, so that what health recommends is
	// what the planner plans.
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return compaction.Plan{}, fmt.Errorf("health: assess %s: open table IO: %w", r.Table, err)
	}
	var opts filescan.Options
	if th.HotIdle > 0 && th.HotMinFileAge > 0 {
		opts.AddedSince = r.GeneratedAt.Add(-th.HotMinFileAge)
	}
	tasks, err := filescan.Plan(ctx, tbl.Metadata(), snap, fsys, opts)
	if err != nil {
		return compaction.Plan{}, fmt.Errorf("health: assess %s: plan files at snapshot %d: %w", r.Table, snap.SnapshotID, err)
	}
	index := map[partitionKey]int{}
	for i, p := range r.Partitions {
		index[partitionKey{int32(p.SpecID), p.Partition}] = i
	}
	for _, t := range tasks {
		if binpack.OverDeleteRatio(t, th.DeleteRatio) {
			r.partition(index, names, t.File).FilesOverDeleteRatio++
		}
	}
	// What the planner leaves alone is not recommended either: the young
	// files of hot partitions (before the plan, as the planner), then hot
	// partitions with too few candidates.
	name := func(df iceberg.DataFile) string { return names.name(df.SpecID(), df.Partition()) }
	var writes map[string]time.Time
	var young map[string]YoungFiles
	if th.HotIdle > 0 {
		if writes, err = RecentWrites(ctx, tbl, r.GeneratedAt, th.HotIdle); err != nil {
			return compaction.Plan{}, fmt.Errorf("health: assess %s: %w", r.Table, err)
		}
		if th.HotMinFileAge > 0 {
			tasks, young = ScopeYoung(tasks, writes, r.GeneratedAt, th.HotIdle, filescan.AddedSince)
		}
	}
	// As the planner groups them: files of another spec than the one
	// compaction writes are bucketed by spec (binpack.PlanInto).
	outSpec, err := optin.ParseOutputSpec(tbl.Properties()[optin.PropertyOutputSpec])
	if err != nil {
		outSpec = optin.OutputSpecCurrent // the planner refuses the table
	}
	plan, err := binpack.PlanInto(th.CompactionConfig(), tasks, optin.WrittenSpec(outSpec, tbl.Metadata().DefaultPartitionSpec()), th.CompactionRules())
	if err != nil {
		return compaction.Plan{}, fmt.Errorf("health: assess %s: compaction plan: %w", r.Table, err)
	}
	if th.HotIdle > 0 {
		plan.Groups, r.HotPartitions = ScopeHot(plan.Groups, writes, r.GeneratedAt, th.HotIdle, th.HotMinFiles, name)
		r.HotPartitions = NoteYoung(r.HotPartitions, young, writes, r.GeneratedAt, th.HotIdle, th.HotMinFileAge, name)
	}
	return plan, nil
}

func compactionRecommendation(plan compaction.Plan, th Thresholds, names *partitionNamer) (Recommendation, bool) {
	if len(plan.Groups) == 0 {
		return Recommendation{}, false
	}
	var rec Recommendation
	small := 0
	deletes := map[string]struct{}{}
	parts := map[string]struct{}{}
	for _, g := range plan.Groups {
		for _, t := range g.Tasks {
			rec.EstimatedFiles++
			rec.EstimatedBytes += t.File.FileSizeBytes()
			if t.File.FileSizeBytes() < th.SmallFileBytes {
				small++
			}
			parts[names.name(t.File.SpecID(), t.File.Partition())] = struct{}{}
			for _, ds := range [][]iceberg.DataFile{t.DeleteFiles, t.EqualityDeleteFiles, t.DeletionVectorFiles} {
				for _, d := range ds {
					key := d.FilePath()
					if off := d.ContentOffset(); off != nil {
						key = fmt.Sprintf("%s@%d", key, *off)
					}
					deletes[key] = struct{}{}
				}
			}
		}
	}
	partNames := make([]string, 0, len(parts))
	for p := range parts {
		partNames = append(partNames, p)
	}
	why := fmt.Sprintf("%d data files (%s) in %d partitions (%s): %d smaller than %s (%d%% of the %s target), %d with too many deletes (at least %.0f%% of rows or %d delete files); compaction rewrites them into about %d files",
		rec.EstimatedFiles, FormatBytes(rec.EstimatedBytes), len(parts), listNames(partNames),
		small, FormatBytes(th.SmallFileBytes), th.SmallFileBytes*100/th.TargetFileSize, FormatBytes(th.TargetFileSize),
		rec.EstimatedFiles-small, th.DeleteRatio*100, th.CompactionConfig().DeleteFileThreshold,
		plan.EstOutputFiles)
	if len(deletes) > 0 {
		why += fmt.Sprintf(", applying the %d delete files they carry", len(deletes))
	}
	rec.Action, rec.Why = ActionCompaction, why
	return rec, true
}

// expirableSnapshots splits the snapshots into those an expiry with the
// table's retention would remove and those it would keep (package expire).
func expirableSnapshots(meta table.Metadata, now time.Time, th Thresholds) (expirable, kept []table.Snapshot) {
	sel := expire.Select(meta, now, expire.Retention{MinSnapshotsToKeep: th.MaxSnapshots, MaxSnapshotAge: th.MaxSnapshotAge, MaxRefAge: th.MaxRefAge})
	return sel.Expired, sel.Kept
}

func expiryRecommendation(ctx context.Context, fsys icebergio.IO, expirable, kept []table.Snapshot, total int, th Thresholds) (Recommendation, error) {
	used := map[string]bool{}
	for _, s := range kept {
		if err := ctx.Err(); err != nil {
			return Recommendation{}, err
		}
		ms, err := s.Manifests(fsys)
		if err != nil {
			return Recommendation{}, fmt.Errorf("read manifest list of snapshot %d: %w", s.SnapshotID, err)
		}
		for _, m := range ms {
			used[m.FilePath()] = true
		}
	}
	rec := Recommendation{Action: ActionExpireSnapshots}
	freed := map[string]bool{}
	for _, s := range expirable {
		if err := ctx.Err(); err != nil {
			return Recommendation{}, err
		}
		if s.ManifestList != "" {
			rec.EstimatedFiles++
		}
		ms, err := s.Manifests(fsys)
		if err != nil {
			return Recommendation{}, fmt.Errorf("read manifest list of snapshot %d: %w", s.SnapshotID, err)
		}
		for _, m := range ms {
			if !used[m.FilePath()] && !freed[m.FilePath()] {
				freed[m.FilePath()] = true
				rec.EstimatedFiles++
				rec.EstimatedBytes += m.Length()
			}
		}
	}
	rec.Why = fmt.Sprintf("%d of %d snapshots are older than %s and not among the newest %d of a branch (history.expire.*); expiring them removes their manifest lists and %d manifests no kept snapshot uses, and the data and delete files only they reference (not counted)",
		len(expirable), total, th.MaxSnapshotAge, th.MaxSnapshots, len(freed))
	return rec, nil
}

// debt computes the Score's components from the finished totals.
func (r *Report) debt(th Thresholds) Debt {
	var d Debt
	if r.DataFiles > 0 {
		d.Files = float64(r.excessFiles) / float64(r.DataFiles)
	}
	if n := r.DataFiles + r.DeleteFiles; n > 0 {
		d.DeleteFiles = float64(r.DeleteFiles) / float64(n)
	}
	d.DeletedRows = r.DeletedRowRatio
	if r.Snapshots > 0 {
		d.Snapshots = float64(r.ExpirableSnapshots) / float64(r.Snapshots)
	}
	if r.DataManifests > th.MaxManifests {
		d.Manifests = float64(r.DataManifests-th.MaxManifests) / float64(r.DataManifests)
	}
	return d
}

// fileSize is the size of the file at loc: Stat when the IO can, else the
// open file's Stat, else its length read through.
func fileSize(fsys icebergio.IO, loc string) (int64, error) {
	if st, ok := fsys.(icebergio.StatIO); ok {
		fi, err := st.Stat(loc)
		if err != nil {
			return 0, err
		}
		return fi.Size(), nil
	}
	f, err := fsys.Open(loc)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		return fi.Size(), nil
	}
	return io.Copy(io.Discard, f)
}

// partitionNamer names partitions with their spec's field names and
// human-readable values.
type partitionNamer struct {
	meta  table.Metadata
	mu    sync.Mutex // specs; manifests are read concurrently
	specs map[int32]*iceberg.PartitionSpec
}

func newPartitionNamer(meta table.Metadata) *partitionNamer {
	return &partitionNamer{meta: meta, specs: map[int32]*iceberg.PartitionSpec{}}
}

func (n *partitionNamer) name(specID int32, part map[int]any) string {
	n.mu.Lock()
	spec, ok := n.specs[specID]
	if !ok {
		spec = n.meta.PartitionSpecByID(int(specID))
		n.specs[specID] = spec
	}
	n.mu.Unlock()
	if spec == nil {
		// A spec the metadata does not list: name the fields by id.
		if len(part) == 0 {
			return Unpartitioned
		}
		ids := make([]int, 0, len(part))
		for id := range part {
			ids = append(ids, id)
		}
		sort.Ints(ids)
		parts := make([]string, len(ids))
		for i, id := range ids {
			parts[i] = fmt.Sprintf("%d=%v", id, part[id])
		}
		return strings.Join(parts, "/")
	}
	if spec.NumFields() == 0 {
		return Unpartitioned
	}
	var sb strings.Builder
	for i, f := range spec.Fields() {
		if i > 0 {
			sb.WriteByte('/')
		}
		sb.WriteString(f.Name)
		sb.WriteByte('=')
		sb.WriteString(n.value(f, part[f.FieldID]))
	}
	return sb.String()
}

func (n *partitionNamer) value(f iceberg.PartitionField, v any) string {
	if v == nil {
		return "null"
	}
	if src, ok := n.sourceType(f.SourceID()); ok {
		return f.Transform.ToHumanStrType(f.Transform.ResultType(src), v)
	}
	return fmt.Sprint(v)
}

// sourceType finds a partition source column's type in the current schema,
// or in an older one if it was dropped.
func (n *partitionNamer) sourceType(id int) (iceberg.Type, bool) {
	if sc := n.meta.CurrentSchema(); sc != nil {
		if t, ok := sc.FindTypeByID(id); ok {
			return t, true
		}
	}
	for _, sc := range n.meta.Schemas() {
		if t, ok := sc.FindTypeByID(id); ok {
			return t, true
		}
	}
	return nil, false
}

// tableOverlaps sums the partitions' column overlaps per column, in the
// order the columns first appear.
func tableOverlaps(parts []PartitionHealth) []ColumnOverlap {
	var out []ColumnOverlap
	index := map[int]int{}
	many := map[int]bool{} // a partition has many values of the column
	for _, p := range parts {
		for _, c := range p.Columns {
			many[c.FieldID] = many[c.FieldID] || c.Values == 0 && c.Files >= MinValueFiles
			i, ok := index[c.FieldID]
			if !ok {
				i = len(out)
				index[c.FieldID] = i
				out = append(out, ColumnOverlap{Column: c.Column, FieldID: c.FieldID, OneValue: true})
			}
			t := &out[i]
			// Weighted by files: the mean over all the files' lower ends.
			t.PointLookupFiles = (t.PointLookupFiles*float64(t.Files) + c.PointLookupFiles*float64(c.Files)) / float64(t.Files+c.Files)
			t.Files += c.Files
			t.OverlapDepth = max(t.OverlapDepth, c.OverlapDepth)
			t.OneValue = t.OneValue && c.OneValue
			t.Values = max(t.Values, c.Values)
		}
	}
	for i := range out {
		if many[out[i].FieldID] {
			out[i].Values = 0
		}
	}
	return out
}

// sortRecommendation recommends a sort where a point lookup on the
// table's first sort column opens more than DefaultMaxPointLookupFiles of
// a partition's files on average. A table without a sort order gets none
// (which order to choose is the query signals' job).
func sortRecommendation(r Report, meta table.Metadata) (Recommendation, bool) {
	var first int
	for _, f := range meta.SortOrder().Fields() {
		if len(f.SourceIDs) > 0 {
			first = f.SourceIDs[0]
		}
		break
	}
	if first == 0 {
		return Recommendation{}, false
	}
	var rec Recommendation
	var parts []string
	column := ""
	for _, p := range r.Partitions {
		for _, c := range p.Columns {
			if c.FieldID == first && !c.OneValue && c.PointLookupFiles > DefaultMaxPointLookupFiles {
				column = c.Column
				rec.EstimatedFiles += p.DataFiles
				rec.EstimatedBytes += p.DataBytes
				parts = append(parts, p.Partition)
			}
		}
	}
	if len(parts) == 0 {
		return Recommendation{}, false
	}
	rec.Action = ActionSort
	rec.Why = fmt.Sprintf("a lookup of one %s value, the table's first sort column, opens more than %d files on average in %d partitions (%s): their files are not clustered on it, so min/max pruning skips few; a sort compaction would leave each value in few files (set icekeeper.compaction.strategy=sort, or run icekeeper compact --sort)",
		column, DefaultMaxPointLookupFiles, len(parts), listNames(parts))
	return rec, true
}
