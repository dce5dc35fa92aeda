package commit

// Rebasing deletes committed during a compaction.
//
// A position delete or deletion vector committed since S on a file the job
// rewrote deletes rows the rewriter copied into new files. Committing the
// rewrite as it is would bring those rows back; aborting (what Iceberg's
// Java actions do) starves busy tables. The committer rebases instead: each
// such delete file D, still live at the head, is replaced in the job's one
// replace snapshot by deletes on the new files, translated with the groups'
// row maps (package rowmap):
//
//   - v2: one position delete file per D, holding D's rows on files the job
//     did not rewrite unchanged and its rows on rewritten files translated
//     to (new file, position); it keeps D's data sequence number, which is
//     above S's, so it applies to the new files (written at S's) and to
//     D's other targets exactly as D did.
//   - v3: one deletion vector per new file that any D deletes rows of, all
//     in one Puffin file, with the largest data sequence number of the Ds
//     it comes from.
//
// Positions the scan at S had already dropped, and positions past a file's
// rows, delete nothing in the new files and are not carried. A D with no
// row left is removed with nothing in its place.
//
// A position delete file or deletion vector the rewriters applied (the job
// removes it as dead, or it also applies to files the job leaves alone)
// may have been removed since S by a writer that merged it into a new
// deletion vector, rewrote position deletes, dropped it as dangling, or
// undid it. That is fine when every row it deleted of a rewritten file is
// deleted again by the concurrent deletes being rebased (none, for a
// dangling one); the committer reads it, checks that, and leaves it out of
// its own removals. Otherwise its rows were meant to come back, which the
// new files cannot show: the job aborts.
//
// Still aborts (ErrAborted with ErrConcurrent), as before:
//   - the group's rows were sorted or moved to another partition spec on
//     the way (no row map);
//   - a concurrent delete whose data sequence number is not above S's
//     deletes a row the scan at S kept;
//   - a removed delete the rewriters applied whose rows of rewritten files
//     the concurrent deletes do not all delete again (conservative: a row
//     another live delete still deletes counts as not deleted again), or
//     that can no longer be read;
//   - a v3 table with a concurrent position delete file (not a DV) that
//     also deletes rows of files the job did not rewrite (v3 tables take
//     no new position delete files);
//   - a row map that does not add up.
//
// The rebased files are named with the job's rebase attempt id (jobs.RebaseAttempt),
// so that an abort removes them with the rewriters' files; a round that
// meets a conflict removes its own before the next.

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/dv"

	"github.com/icekeeper/icekeeper/shared/deletefiles"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/outputs"
	"github.com/icekeeper/icekeeper/shared/rowmap"
)

// groupOutput is one group's winning descriptor and the new files it names.
type groupOutput struct {
	desc  messages.Descriptor
	files []iceberg.DataFile
}

// rebasedDelete is a delete file a rebase adds, with the data sequence
// number it keeps.
type rebasedDelete struct {
	file iceberg.DataFile
	seq  int64
}

// mayTarget reports whether a position delete file or deletion vector may
// delete rows of a rewritten file, and which one: the one it names, or the
// one (of any) its file_path bounds span; without either, any file of a
// rewritten partition it is in ("" then).
func mayTarget(df iceberg.DataFile, pathField int, scope Scope) (string, bool) {
	if target := referencedPath(df, pathField); target != "" {
		_, ok := scope.Rewritten[target]
		return target, ok
	}
	if lower, upper, ok := pathBounds(df, pathField); ok {
		for p := range scope.Rewritten {
			if p >= lower && p <= upper {
				return p, true
			}
		}
		return "", false
	}
	_, ok := scope.RewrittenPartitions[partitionKey(df)]
	return "", ok
}

// rebase returns st with the concurrent deletes of conc rebased onto the
// new files (see the comment at the top of this file), or ErrAborted.
func (c *Committer) rebase(ctx context.Context, log *slog.Logger, cur, pinned *table.Table, job jobs.Job, pin messages.Pin, st stagedRewrite, conc Concurrent, cache *rebaseCache) (stagedRewrite, error) {
	abort := func(format string, args ...any) error {
		return fmt.Errorf("%w: %w: cannot rebase: "+format, append([]any{ErrAborted, ErrConcurrent}, args...)...)
	}
	fs, err := cur.FS(ctx)
	if err != nil {
		return st, fmt.Errorf("open table IO: %w", err)
	}
	keys := map[string]struct{}{}
	for _, d := range conc.Added {
		keys[fileKey(d)] = struct{}{}
	}
	live, seqs, err := liveDeleteFiles(ctx, fs, cur.CurrentSnapshot(), keys)
	if err != nil {
		return st, err
	}
	slices.SortFunc(live, func(a, b iceberg.DataFile) int { return strings.Compare(fileKey(a), fileKey(b)) })

	groupMaps := rowMaps{c: c, ctx: ctx, pinned: pinned, job: job, st: st, resolved: cache.maps}
	v3 := cur.Metadata().Version() >= 3
	// What each live concurrent delete deletes: on rewritten files (raw
	// positions, for the check of removed deletes) and elsewhere.
	type source struct {
		file   iceberg.DataFile
		seq    int64
		onNew  map[string]*dv.RoaringPositionBitmap // new file -> positions
		others map[string]*dv.RoaringPositionBitmap // not rewritten
	}
	var sources []source
	concurrentOn := map[string]*dv.RoaringPositionBitmap{} // rewritten file -> raw positions
	cache.prefetchVectors(fs, live)
	for _, d := range live {
		src := source{file: d, seq: seqs[fileKey(d)], onNew: map[string]*dv.RoaringPositionBitmap{}, others: map[string]*dv.RoaringPositionBitmap{}}
		byFile, err := cache.positionsOf(ctx, fs, d)
		if err != nil {
			return st, err
		}
		for path, pos := range byFile {
			if _, ok := st.scope.Rewritten[path]; !ok {
				src.others[path] = pos
				continue
			}
			if concurrentOn[path] == nil {
				concurrentOn[path] = dv.NewRoaringPositionBitmap()
			}
			concurrentOn[path].Or(pos)
			rm, err := groupMaps.of(path)
			if err != nil {
				return st, err
			}
			located, err := rm.Locate(path, slices.Collect(func(yield func(int64) bool) {
				for p := range pos.Positions() {
					if !yield(int64(p)) {
						return
					}
				}
			}))
			if err != nil {
				return st, abort("%s on %s: %v", fileKey(d), path, err)
			}
			if len(located) > 0 && src.seq <= pin.SequenceNumber {
				return st, abort("%s has data sequence number %d, not above the pinned snapshot's %d, and deletes rows the scan at it kept", fileKey(d), src.seq, pin.SequenceNumber)
			}
			for _, l := range located {
				if src.onNew[l.Output] == nil {
					src.onNew[l.Output] = dv.NewRoaringPositionBitmap()
				}
				src.onNew[l.Output].Set(uint64(l.Pos))
			}
		}
		if v3 && !table.IsDeletionVector(d) && len(src.others) > 0 {
			return st, abort("position delete file %s on a v3 table also deletes rows of files the job did not rewrite, and v3 tables take no new position delete files", d.FilePath())
		}
		sources = append(sources, src)
	}

	// Applied deletes removed since S (dead or not): every row they
	// deleted on a rewritten file must be deleted again by the concurrent
	// deletes.
	rows := map[string]int64{}
	for _, f := range st.oldFiles {
		rows[f.FilePath()] = f.Count()
	}
	gone := map[string]struct{}{}
	cache.prefetchVectors(fs, conc.Removed)
	for _, r := range conc.Removed {
		byFile, err := cache.positionsOf(ctx, fs, r)
		if err != nil {
			if errors.Is(err, iofs.ErrNotExist) {
				return st, abort("%s was removed since the pinned snapshot and can no longer be read: %v", fileKey(r), err)
			}
			return st, err
		}
		for path, pos := range byFile {
			n, ok := rows[path]
			if !ok {
				continue // not rewritten: the table's business, not the job's
			}
			again := concurrentOn[path]
			for p := range pos.Positions() {
				if int64(p) < n && (again == nil || !again.Contains(p)) {
					return st, abort("%s, which deleted position %d of rewritten file %s, was removed since the pinned snapshot, and nothing committed since deletes that row again", fileKey(r), p, path)
				}
			}
		}
		gone[fileKey(r)] = struct{}{}
	}

	out := st
	out.deadDeletes = nil
	for _, d := range st.deadDeletes {
		if _, ok := gone[fileKey(d)]; !ok {
			out.deadDeletes = append(out.deadDeletes, d)
		}
	}
	out.rebaseRemoves, out.rebaseAdds = nil, nil
	for _, s := range sources {
		out.rebaseRemoves = append(out.rebaseRemoves, s.file)
	}
	if len(sources) == 0 {
		return out, nil
	}

	wfs, ok := fs.(icebergio.WriteFileIO)
	if !ok {
		return st, fmt.Errorf("%w: the table's file IO cannot write", ErrAborted)
	}
	locs, err := table.LoadLocationProvider(cur.Location(), cur.Properties())
	if err != nil {
		return st, fmt.Errorf("%w: location provider: %w", ErrAborted, err)
	}
	run, err := outputs.RunID(jobs.RebaseAttempt(job.ID, st.batch), 1+rand.IntN(outputs.MaxRuns-1))
	if err != nil {
		return st, err
	}
	newFile := map[string]iceberg.DataFile{}
	for _, f := range st.newFiles {
		newFile[f.FilePath()] = f
	}
	meta := cur.Metadata()
	written := func(paths ...string) stagedRewrite {
		// Whatever may have reached storage, for the caller's cleanup.
		for _, p := range paths {
			out.rebaseAdds = append(out.rebaseAdds, rebasedDelete{file: deletefiles.Placeholder(p)})
		}
		return out
	}
	if v3 {
		perNew := map[string]*dv.RoaringPositionBitmap{}
		seqOf := map[string]int64{}
		for _, s := range sources {
			for path, pos := range s.onNew {
				if perNew[path] == nil {
					perNew[path] = dv.NewRoaringPositionBitmap()
				}
				perNew[path].Or(pos)
				seqOf[path] = max(seqOf[path], s.seq)
			}
		}
		if len(perNew) > 0 {
			w := dv.NewDVWriter(wfs, func(id int32) *iceberg.PartitionSpec { return meta.PartitionSpecByID(int(id)) })
			for _, path := range slices.Sorted(maps.Keys(perNew)) {
				f := newFile[path]
				w.Load(path, perNew[path], f.SpecID(), f.Partition())
			}
			path := locs.NewDataLocation(run.String() + "-rebased-dv.puffin")
			files, err := w.Flush(ctx, path)
			if err != nil {
				c.removeRebased(ctx, log, cur, written(path))
				return st, fmt.Errorf("write rebased deletion vectors: %w", err)
			}
			for _, f := range files {
				ref := f.ReferencedDataFile()
				if ref == nil {
					return st, fmt.Errorf("%w: rebased deletion vector %s names no data file", ErrInvariant, f.FilePath())
				}
				out.rebaseAdds = append(out.rebaseAdds, rebasedDelete{file: f, seq: seqOf[*ref]})
			}
		}
	} else {
		for i, s := range sources {
			var entries []deletefiles.Entries
			for path, pos := range s.others {
				entries = append(entries, deletefiles.Entries{Path: path, Pos: pos})
			}
			for path, pos := range s.onNew {
				entries = append(entries, deletefiles.Entries{Path: path, Pos: pos})
			}
			if len(entries) == 0 {
				continue // every row it deleted was already gone
			}
			spec := meta.PartitionSpecByID(int(s.file.SpecID()))
			if spec == nil {
				return st, fmt.Errorf("%w: partition spec %d of %s is not in the table's metadata", ErrAborted, s.file.SpecID(), s.file.FilePath())
			}
			path := locs.NewDataLocation(fmt.Sprintf("%s-%05d-rebased-deletes.parquet", run.String(), i))
			f, err := deletefiles.WritePositionDeletes(wfs, path, *spec, s.file.Partition(), entries)
			if err != nil {
				c.removeRebased(ctx, log, cur, written(path))
				return st, fmt.Errorf("write rebased position deletes: %w", err)
			}
			out.rebaseAdds = append(out.rebaseAdds, rebasedDelete{file: f, seq: s.seq})
		}
	}
	log.Info("rebased deletes committed during the job", "concurrent_deletes", len(sources), "removed_dead_deletes", len(gone), "rebased_files", len(out.rebaseAdds))
	return out, nil
}

// removeRebased removes the delete files a rebase round wrote (it was not
// committed).
func (c *Committer) removeRebased(ctx context.Context, log *slog.Logger, tbl *table.Table, st stagedRewrite) {
	var paths []string
	for _, a := range st.rebaseAdds {
		if !slices.Contains(paths, a.file.FilePath()) {
			paths = append(paths, a.file.FilePath())
		}
	}
	if len(paths) == 0 {
		return
	}
	if err := outputs.Remove(context.WithoutCancel(ctx), tbl, paths); err != nil {
		log.Warn("remove rebased deletes of an uncommitted round", "err", err.Error())
	}
}

// rebaseCache keeps, across a commit's rounds, what does not change
// between them: the resolved row maps (working out equality deletes reads
// data files) and what each delete file deletes (files are immutable). A
// writer committing every few seconds must not outpace a round.
type rebaseCache struct {
	maps      map[int]*rowmap.Resolved
	positions map[string]map[string]*dv.RoaringPositionBitmap
}

func newRebaseCache() *rebaseCache {
	return &rebaseCache{maps: map[int]*rowmap.Resolved{}, positions: map[string]map[string]*dv.RoaringPositionBitmap{}}
}

// positionsOf is positionsOf, read once per delete file. Callers must not
// modify the bitmaps.
func (c *rebaseCache) positionsOf(ctx context.Context, fs icebergio.IO, d iceberg.DataFile) (map[string]*dv.RoaringPositionBitmap, error) {
	if p, ok := c.positions[fileKey(d)]; ok {
		return p, nil
	}
	p, err := positionsOf(ctx, fs, d)
	if err == nil {
		c.positions[fileKey(d)] = p
	}
	return p, err
}

// prefetchVectors reads the deletion vectors among files into the cache,
// each Puffin file's footer decoded once (a concurrent MERGE's vectors
// share one). It is best effort: what it cannot read is left to
// positionsOf, which reports the error for the file it concerns.
func (c *rebaseCache) prefetchVectors(fs icebergio.IO, files []iceberg.DataFile) {
	var vectors []iceberg.DataFile
	for _, d := range files {
		if _, ok := c.positions[fileKey(d)]; !ok && table.IsDeletionVector(d) && d.ReferencedDataFile() != nil {
			vectors = append(vectors, d)
		}
	}
	if len(vectors) < 2 {
		return
	}
	bms, err := deletefiles.ReadDeletionVectors(fs, vectors)
	if err != nil {
		return
	}
	for i, d := range vectors {
		c.positions[fileKey(d)] = map[string]*dv.RoaringPositionBitmap{*d.ReferencedDataFile(): bms[i]}
	}
}

// positionsOf reads what a position delete file or deletion vector
// deletes, per data file.
func positionsOf(ctx context.Context, fs icebergio.IO, d iceberg.DataFile) (map[string]*dv.RoaringPositionBitmap, error) {
	if table.IsDeletionVector(d) {
		ref := d.ReferencedDataFile()
		if ref == nil {
			return nil, fmt.Errorf("%w: deletion vector %s names no data file", ErrAborted, fileKey(d))
		}
		bm, err := dv.ReadDV(fs, d)
		if err != nil {
			return nil, fmt.Errorf("read deletion vector %s: %w", fileKey(d), err)
		}
		return map[string]*dv.RoaringPositionBitmap{*ref: bm}, nil
	}
	out := map[string]*dv.RoaringPositionBitmap{}
	if err := deletefiles.ReadPositions(ctx, fs, d, nil, out); err != nil {
		return nil, fmt.Errorf("read position delete file %s: %w", d.FilePath(), err)
	}
	return out, nil
}

// rowMaps loads and resolves the groups' row maps once each.
type rowMaps struct {
	c        *Committer
	ctx      context.Context
	pinned   *table.Table
	job      jobs.Job
	st       stagedRewrite
	resolved map[int]*rowmap.Resolved
}

// of returns the resolved row map of the group that rewrote path.
func (m rowMaps) of(path string) (*rowmap.Resolved, error) {
	gi, ok := m.st.groupOf[path]
	if !ok {
		return nil, fmt.Errorf("%w: rewritten file %s is in no group", ErrInvariant, path)
	}
	if r := m.resolved[gi]; r != nil {
		return r, nil
	}
	g := m.st.groups[gi]
	// A sorted or z-ordered group's rows are permuted: a row map of it
	// (a rewriter from before that was refused) would place deletes on
	// other rows.
	if (g.desc.RowMapKey == "" && len(g.desc.RowMap) == 0) || g.desc.Counters.SortRuns > 0 {
		return nil, fmt.Errorf("%w: %w: cannot rebase: group %d's rows were sorted or moved to another partition spec, so where the rows of %s went is not recorded", ErrAborted, ErrConcurrent, g.desc.Group, path)
	}
	data := []byte(g.desc.RowMap)
	if len(data) == 0 {
		var err error
		if data, err = m.c.blobs.Get(m.ctx, g.desc.RowMapKey); err != nil {
			return nil, fmt.Errorf("read row map of group %d: %w", g.desc.Group, err)
		}
	}
	var rm rowmap.Map
	if err := messages.Decode(data, &rm); err != nil {
		return nil, fmt.Errorf("%w: row map of group %d: %w", ErrInvariant, g.desc.Group, err)
	}
	if err := checkRowMap(rm, g); err != nil {
		return nil, err
	}
	r, err := rowmap.Resolve(m.ctx, rm, m.pinned.Metadata(), func(ctx context.Context, t table.FileScanTask) (*dv.RoaringPositionBitmap, error) {
		return deletefiles.EqualityPositions(ctx, m.pinned, t, t.EqualityDeleteFiles, 0)
	})
	if err != nil {
		if errors.Is(err, rowmap.ErrUnusable) || errors.Is(err, deletefiles.ErrMismatch) {
			return nil, fmt.Errorf("%w: group %d: %w", ErrInvariant, g.desc.Group, err)
		}
		return nil, err
	}
	m.resolved[gi] = r
	return r, nil
}

// checkRowMap checks that a row map is the group winner's and names
// exactly its input files and new files.
func checkRowMap(rm rowmap.Map, g groupOutput) error {
	d := g.desc
	if rm.JobID != d.JobID || rm.Group != d.Group || rm.Attempt != d.Attempt {
		return fmt.Errorf("%w: row map of group %d is for job %s group %d attempt %s", ErrInvariant, d.Group, rm.JobID, rm.Group, rm.Attempt)
	}
	var in []string
	for _, i := range rm.Inputs {
		in = append(in, i.Path)
	}
	if !equalStrings(messages.SortedCopy(in), messages.SortedCopy(d.InputPaths)) {
		return fmt.Errorf("%w: row map of group %d names other input files than its descriptor", ErrInvariant, d.Group)
	}
	if len(rm.Outputs) != len(g.files) {
		return fmt.Errorf("%w: row map of group %d names %d new files, its descriptor %d", ErrInvariant, d.Group, len(rm.Outputs), len(g.files))
	}
	rows := map[string]int64{}
	for _, f := range g.files {
		rows[f.FilePath()] = f.Count()
	}
	for _, o := range rm.Outputs {
		if n, ok := rows[o.Path]; !ok || n != o.Rows {
			return fmt.Errorf("%w: row map of group %d: new file %s with %d rows is not in its descriptor", ErrInvariant, d.Group, o.Path, o.Rows)
		}
	}
	return nil
}
