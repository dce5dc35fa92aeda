package commit

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/outputs"
)

// gatherDeletes is gather for a delete-file rewrite (jobs.KindRewriteDeletes,
// package rewrite, deletes.go). It checks, over the whole job:
//   - every group is done, its descriptor names this job, group and winner,
//     and carried over exactly the plan's input delete files for exactly the
//     plan's data files;
//   - no delete file is in two groups; every input delete file is live at S,
//     and so is every data file a new delete targets;
//   - the new files are position deletes (v2) or deletion vectors (v3) of
//     the group's spec, named for the winning attempt, under the table's
//     data location; they hold as many deletes as the descriptor says, and
//     a deletion vector names a data file of its group;
//   - the deletes carried over are at most the rows the data files hold.
//
// It stages the input delete files for removal and the new files for
// addition; no data file changes. When equality deletes are among the
// inputs (converted), the commit takes two snapshots (stagedRewrite.addFirst).
// The scope for ValidateSince: a concurrent removal of an input delete
// file aborts (Removing); on v3 so does a concurrent delete on, or removal
// of, a data file that gets a new deletion vector (Rewritten): two live
// DVs for one data file are not allowed, and the new one would hide the
// other; and so does a data file added with a data sequence number below
// that of a converted equality delete of its partition (EqualityRemoved):
// the delete applies to it, the conversion does not.
func (c *Committer) gatherDeletes(ctx context.Context, job jobs.Job, pinned *table.Table) (stagedRewrite, error) {
	var st stagedRewrite
	plan, groups, err := c.readPlan(ctx, job)
	if err != nil {
		return st, err
	}
	st.scope = Scope{Rewritten: map[string]struct{}{}, RewrittenPartitions: map[string]struct{}{}, MovedPartitions: map[string]struct{}{}, Removing: map[string]struct{}{}}
	dataRoots := outputs.DataRoots(pinned)
	v3 := pinned.Metadata().Version() >= 3
	covered := map[string]struct{}{}
	newPaths := map[string]struct{}{}
	for i, g := range groups {
		pg := plan.Groups[i]
		d, err := c.readDescriptor(ctx, job, g, pg)
		if err != nil {
			return st, err
		}
		if len(pg.InputDeletes) == 0 || !equalStrings(messages.SortedCopy(d.InputDeletes), pg.InputDeletes) {
			return st, fmt.Errorf("%w: group %d carried over %d delete files, the plan has %d (or different ones)", ErrInvariant, g.Index, len(d.InputDeletes), len(pg.InputDeletes))
		}
		for _, k := range pg.InputDeletes {
			if _, dup := st.scope.Removing[k]; dup {
				return st, fmt.Errorf("%w: delete file %s is in more than one group", ErrInvariant, k)
			}
			st.scope.Removing[k] = struct{}{}
		}
		inGroup := map[string]struct{}{}
		for _, p := range d.InputPaths {
			inGroup[p] = struct{}{}
			covered[p] = struct{}{}
		}
		cnt := d.Counters
		if cnt.RowsBeforeDeletes != pg.InputRows {
			return st, fmt.Errorf("%w: group %d's data files hold %d rows, the plan has %d", ErrInvariant, g.Index, cnt.RowsBeforeDeletes, pg.InputRows)
		}
		carried := cnt.DeletedRowsPosition + cnt.DeletedRowsDV + cnt.DeletedRowsEquality
		if cnt.RowsWritten != carried || carried > cnt.RowsBeforeDeletes {
			return st, fmt.Errorf("%w: group %d wrote %d deletes, carried over %d, of %d rows", ErrInvariant, g.Index, cnt.RowsWritten, carried, cnt.RowsBeforeDeletes)
		}
		files, err := messages.DecodeDataFiles(pinned.Metadata(), pg.SpecID, d.NewFiles)
		if err != nil {
			return st, fmt.Errorf("%w: group %d: %w", ErrInvariant, g.Index, err)
		}
		var n int64
		for _, f := range files {
			key := messages.DeleteFileKey(f)
			switch {
			case f.ContentType() != iceberg.EntryContentPosDeletes:
				return st, fmt.Errorf("%w: group %d wrote %s, a %s file, not position deletes", ErrInvariant, g.Index, f.FilePath(), f.ContentType())
			case int(f.SpecID()) != pg.SpecID:
				return st, fmt.Errorf("%w: group %d wrote %s in spec %d, the group is spec %d", ErrInvariant, g.Index, f.FilePath(), f.SpecID(), pg.SpecID)
			case !outputs.OfAttempt(f.FilePath(), d.Attempt):
				return st, fmt.Errorf("%w: new file %s is not named for attempt %s", ErrInvariant, f.FilePath(), d.Attempt)
			case !underAny(f.FilePath(), dataRoots):
				return st, fmt.Errorf("%w: new file %s is outside the table's data location (%s)", ErrInvariant, f.FilePath(), strings.Join(dataRoots, ", "))
			case v3 != table.IsDeletionVector(f):
				return st, fmt.Errorf("%w: group %d wrote %s: a v%d table takes %s", ErrInvariant, g.Index, f.FilePath(), pinned.Metadata().Version(), map[bool]string{true: "deletion vectors", false: "position delete files"}[v3])
			}
			if _, dup := newPaths[key]; dup {
				return st, fmt.Errorf("%w: new file %s written twice", ErrInvariant, key)
			}
			newPaths[key] = struct{}{}
			if v3 {
				ref := f.ReferencedDataFile()
				if ref == nil {
					return st, fmt.Errorf("%w: deletion vector %s names no data file", ErrInvariant, key)
				}
				if _, ok := inGroup[*ref]; !ok {
					return st, fmt.Errorf("%w: deletion vector %s is for %s, not a data file of group %d", ErrInvariant, key, *ref, g.Index)
				}
				if _, dup := st.scope.Rewritten[*ref]; dup {
					return st, fmt.Errorf("%w: two new deletion vectors for %s", ErrInvariant, *ref)
				}
				st.scope.Rewritten[*ref] = struct{}{}
			}
			n += f.Count()
		}
		if n != carried {
			return st, fmt.Errorf("%w: group %d: new files hold %d deletes, the descriptor says %d", ErrInvariant, g.Index, n, carried)
		}
		st.newFiles = append(st.newFiles, files...)
		st.rowsWritten += n
	}

	fs, err := pinned.FS(ctx)
	if err != nil {
		return st, fmt.Errorf("open table IO: %w", err)
	}
	snapS := pinned.CurrentSnapshot()
	live, parts, _, err := liveFiles(ctx, fs, pinned, snapS, covered)
	if err != nil {
		return st, err
	}
	if len(live) != len(covered) {
		return st, fmt.Errorf("%w: %d of the %d data files the deletes apply to are live at the pinned snapshot", ErrInvariant, len(live), len(covered))
	}
	if v3 {
		st.scope.RewrittenPartitions = parts
	}
	var seqs map[string]int64
	if st.deadDeletes, seqs, err = liveDeleteFiles(ctx, fs, snapS, st.scope.Removing); err != nil {
		return st, err
	}
	st.scope.EqualityRemoved = map[string]int64{}
	for _, d := range st.deadDeletes {
		if d.ContentType() != iceberg.EntryContentEqDeletes {
			continue
		}
		st.addFirst = true
		k := partitionKey(d)
		if len(d.Partition()) == 0 {
			k = "" // an unpartitioned spec's equality delete applies everywhere
		}
		st.scope.EqualityRemoved[k] = max(st.scope.EqualityRemoved[k], seqs[messages.DeleteFileKey(d)])
	}
	if len(st.deadDeletes) != len(st.scope.Removing) {
		return st, fmt.Errorf("%w: %d of the %d input delete files are live at the pinned snapshot", ErrInvariant, len(st.deadDeletes), len(st.scope.Removing))
	}
	if !v3 {
		// Position deletes added meanwhile stay and still apply: nothing
		// they target changes.
		st.scope.Rewritten = map[string]struct{}{}
	}
	return st, nil
}

// liveDeleteFiles returns the live delete files of snap whose keys
// (messages.DeleteFileKey) are in keys, and their data sequence numbers.
func liveDeleteFiles(ctx context.Context, fs icebergio.IO, snap *table.Snapshot, keys map[string]struct{}) ([]iceberg.DataFile, map[string]int64, error) {
	var out []iceberg.DataFile
	seen := map[string]int64{}
	err := eachLiveDelete(ctx, fs, snap, func(df iceberg.DataFile, seq int64) error {
		k := messages.DeleteFileKey(df)
		if _, ok := keys[k]; !ok {
			return nil
		}
		if _, dup := seen[k]; dup {
			return nil
		}
		seen[k] = seq
		out = append(out, df)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return out, seen, nil
}

// SummaryStagedFor names, on the first snapshot of a delete-file rewrite
// that converts equality deletes, the job whose commit it is part of.
const SummaryStagedFor = messages.SummaryStagedFor

// stageAddedDeletes stages the first of a converting delete-file rewrite's
// two snapshots on txn (see stagedRewrite.addFirst): a row delta that adds
// the new delete files and removes the deletion vectors they supersede
// (one live DV per data file). It returns st without those DVs, for the
// rewrite that removes the other inputs. The row delta gives the new
// deletes the new snapshot's sequence number, above every data file they
// target (all live at S), so each applies where it should; no reader can
// see the first snapshot without the second, as the catalog takes both in
// one commit, and a time travel to it sees the same rows (the old deletes
// are still there, and agree).
func stageAddedDeletes(ctx context.Context, txn *table.Transaction, props iceberg.Properties, st stagedRewrite) (stagedRewrite, error) {
	// Only the second snapshot carries the job id (SummaryJobID): a job
	// stamps one snapshot, the one FindJobSnapshot finds. The first names
	// the job as SummaryStagedFor.
	first := iceberg.Properties{}
	for k, v := range props {
		if k == SummaryJobID {
			k = SummaryStagedFor
		}
		first[k] = v
	}
	rd := txn.NewRowDelta(first)
	rd.AddDeletes(st.newFiles...)
	superseded := map[string]struct{}{}
	for _, f := range st.newFiles {
		if ref := f.ReferencedDataFile(); ref != nil && table.IsDeletionVector(f) {
			superseded[*ref] = struct{}{}
		}
	}
	var rest []iceberg.DataFile
	for _, d := range st.deadDeletes {
		if ref := d.ReferencedDataFile(); ref != nil && table.IsDeletionVector(d) {
			if _, ok := superseded[*ref]; ok {
				rd.RemoveDeletes(d)
				continue
			}
		}
		rest = append(rest, d)
	}
	if err := rd.Commit(ctx); err != nil {
		return st, fmt.Errorf("stage the new deletes: %w", err)
	}
	st.deadDeletes, st.newFiles = rest, nil
	return st, nil
}
