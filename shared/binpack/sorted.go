package binpack

import (
	"fmt"
	"slices"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"

	"github.com/icekeeper/icekeeper/shared/bounds"
)

// SortKey is the column a sort compaction groups files by: the source
// column of the table's first sort field.
type SortKey struct {
	FieldID int
	Type    iceberg.Type
}

// SortedPlan is a sort compaction's plan.
type SortedPlan struct {
	compaction.Plan
	// Oversized counts the overlapping runs of files larger than one
	// rewriter's group (maxGroupBytes): only their candidates are
	// rewritten (each group sorted), and they stay overlapping.
	Oversized int
	// Exchanges (PlanSortedExchanging) are the indices, in Groups, of the
	// groups that each hold one such run whole, for a two-stage sort
	// (package exchange): larger than maxGroupBytes, to be split into
	// maps and reduces by the caller.
	Exchanges []int
}

// PlanSorted plans a sort compaction of the whole files of tasks.
//
// Files of an older partition spec are planned per partition of their
// spec (not per spec, as PlanInto does): a run is one partition's.
//
// Within each partition the files are cut, by their range on the key
// column (manifest bounds), into runs: a run is a maximal set of files
// whose ranges overlap, chained. Ranges that only touch ([1,5] and [5,9])
// do not join a run, so the touching files a sorted rewrite leaves behind
// are not rewritten again. A file without readable bounds overlaps
// everything. A run is rewritten when it has two or more files or holds a
// file iceberg-go's planner would compact (Candidate); a lone file that is
// neither is left alone.
//
// Consecutive runs to rewrite, with no run left alone between them, are
// packed into one group up to the target file size, so sorting them
// together cannot produce a file that overlaps a file left alone; a run
// larger than that is a group of its own, and a run larger than
// maxGroupBytes is split (Oversized).
//
// Every group's files are disjoint from every other group's and from the
// files left alone, so when each group is sorted as a whole the job's new
// files do not overlap one another or the rest of the partition (the
// rewriter sorts, package sortrows). Like Plan, PlanSorted reorders tasks
// in place: the groups' tasks first, then the rest.
//
// With onlyCandidates, a run is rewritten only when it holds candidates
// as bin-packing counts them (at least MinInputFiles, or one for its
// deletes): for a z-order, whose files overlap on every column by design,
// so that overlap alone is no reason to rewrite.
func PlanSorted(cfg compaction.Config, key SortKey, tasks []table.FileScanTask, maxGroupBytes int64, onlyCandidates bool) (SortedPlan, error) {
	return planSorted(cfg, key, tasks, maxGroupBytes, onlyCandidates, false)
}

// PlanSortedExchanging is PlanSorted where a run larger than maxGroupBytes
// is not cut down to its candidates but planned whole, as one group
// listed in Exchanges: the caller rewrites it in two stages, so that it
// comes out disjoint however large it is.
func PlanSortedExchanging(cfg compaction.Config, key SortKey, tasks []table.FileScanTask, maxGroupBytes int64) (SortedPlan, error) {
	return planSorted(cfg, key, tasks, maxGroupBytes, false, true)
}

func planSorted(cfg compaction.Config, key SortKey, tasks []table.FileScanTask, maxGroupBytes int64, onlyCandidates, exchange bool) (SortedPlan, error) {
	if err := cfg.Validate(); err != nil {
		return SortedPlan{}, fmt.Errorf("invalid compaction config: %w", err)
	}
	kind := bounds.KindOf(key.Type)
	if kind == 0 {
		return SortedPlan{}, fmt.Errorf("sort compaction: the first sort column (field %d, %s) has no order in the manifests' bounds", key.FieldID, key.Type)
	}
	if maxGroupBytes <= 0 {
		return SortedPlan{}, fmt.Errorf("sort compaction: the group size limit must be positive, got %d", maxGroupBytes)
	}
	tasks = WholeFiles(tasks)
	plan := SortedPlan{Plan: compaction.Plan{TotalInputFiles: len(tasks)}}
	for i := range tasks {
		plan.TotalInputBytes += tasks[i].File.FileSizeBytes()
	}

	type file struct {
		idx       int32
		r         bounds.Range
		unbounded bool
	}
	index := map[string]int{}
	var keys []string
	var buckets [][]file
	for i := range tasks {
		k := bucketKey(tasks[i].File, EachOwnSpec)
		b, ok := index[k]
		if !ok {
			b = len(buckets)
			index[k] = b
			keys = append(keys, k)
			buckets = append(buckets, nil)
		}
		r, ok := bounds.Of(tasks[i].File, key.FieldID, kind, key.Type)
		buckets[b] = append(buckets[b], file{idx: int32(i), r: r, unbounded: !ok})
	}

	var chosen []span
	for b, files := range buckets {
		slices.SortStableFunc(files, func(x, y file) int {
			switch {
			case x.unbounded != y.unbounded:
				if x.unbounded {
					return -1
				}
				return 1
			case x.unbounded:
				return 0
			}
			return bounds.Compare(kind, x.r.Lo, y.r.Lo)
		})
		// Runs, in key order.
		type run struct {
			indices    []int32
			bytes      int64
			candidates int
			// byDeletes: a file is a candidate for its deletes.
			byDeletes bool
			rewrite   bool
		}
		var runs []run
		var hi bounds.Value
		open := false // hi is +infinity
		for _, f := range files {
			joins := len(runs) > 0 && (open || f.unbounded || bounds.Compare(kind, f.r.Lo, hi) < 0)
			if !joins {
				runs = append(runs, run{})
				hi, open = f.r.Hi, f.unbounded
			} else if f.unbounded {
				open = true
			} else if !open && bounds.Compare(kind, f.r.Hi, hi) > 0 {
				hi = f.r.Hi
			}
			r := &runs[len(runs)-1]
			r.indices = append(r.indices, f.idx)
			r.bytes += tasks[f.idx].File.FileSizeBytes()
			if Candidate(cfg, tasks[f.idx]) {
				r.candidates++
				r.byDeletes = r.byDeletes || deleteCandidate(cfg, tasks[f.idx])
			}
			if onlyCandidates {
				// As bin-packing counts them: enough candidates, or
				// one for its deletes. (A z-order's own last, smaller
				// file is a candidate; alone it must not make the
				// partition's run rewritten again.)
				r.rewrite = r.candidates >= int(cfg.MinInputFiles) || r.byDeletes
			} else {
				r.rewrite = len(r.indices) > 1 || r.candidates > 0
			}
		}
		// Groups: consecutive runs to rewrite, packed.
		var cur span
		var curBytes int64
		flush := func() {
			if len(cur.indices) > 0 && (cur.overlaps || worthSorting(cfg, tasks, cur.indices)) {
				chosen = append(chosen, cur)
			} else {
				plan.SkippedFiles += len(cur.indices)
			}
			cur, curBytes = span{key: keys[b]}, 0
		}
		cur.key = keys[b]
		for _, r := range runs {
			if !r.rewrite {
				flush()
				plan.SkippedFiles += len(r.indices)
				continue
			}
			if curBytes > 0 && curBytes+r.bytes > cfg.TargetFileSizeBytes {
				flush()
			}
			if r.bytes <= maxGroupBytes {
				cur.indices = append(cur.indices, r.indices...)
				cur.overlaps = cur.overlaps || len(r.indices) > 1
				curBytes += r.bytes
				continue
			}
			// Larger than one rewriter. Rewriting it whole in pieces
			// would leave pieces that overlap, and the next plan would
			// find the same run and rewrite it again, forever. So only
			// its candidates are rewritten, in key order, packed as
			// bin-packing would (each group sorted): the run stays
			// overlapping, but no file is rewritten twice for nothing.
			flush()
			if exchange {
				chosen = append(chosen, span{key: keys[b], indices: r.indices, overlaps: true, exchange: true})
				continue
			}
			plan.Oversized++
			part := span{key: keys[b]}
			var partBytes int64
			take := func() {
				if len(part.indices) > 0 && worthSorting(cfg, tasks, part.indices) {
					chosen = append(chosen, part)
				} else {
					plan.SkippedFiles += len(part.indices)
				}
				part, partBytes = span{key: keys[b]}, 0
			}
			for _, i := range r.indices {
				if !Candidate(cfg, tasks[i]) {
					plan.SkippedFiles++
					continue
				}
				size := tasks[i].File.FileSizeBytes()
				if len(part.indices) > 0 && partBytes+size > min(maxGroupBytes, max(cfg.TargetFileSizeBytes, size)) {
					take()
				}
				part.indices = append(part.indices, i)
				partBytes += size
			}
			take()
		}
		flush()
	}

	groupChosen(cfg, tasks, chosen, &plan.Plan)
	for i, c := range chosen {
		if c.exchange {
			plan.Exchanges = append(plan.Exchanges, i)
		}
	}
	return plan, nil
}

// worthSorting decides a group of files that overlap nothing (runs of
// one file): rewriting them only packs them, so iceberg-go's bin-packing
// rules apply. At least MinInputFiles of them, or one file that is too
// large or whose deletes make it a candidate (Candidate's delete rules).
// One small clean file, or one with a partition-wide delete file that
// drops none of its rows, would only be copied.
func worthSorting(cfg compaction.Config, tasks []table.FileScanTask, indices []int32) bool {
	if len(indices) >= int(cfg.MinInputFiles) {
		return true
	}
	for _, i := range indices {
		if deleteCandidate(cfg, tasks[i]) || tasks[i].File.FileSizeBytes() > cfg.MaxFileSizeBytes {
			return true
		}
	}
	return false
}

// deleteCandidate: Candidate's delete rules (enough delete files, or
// file-scoped deletes over the ratio).
func deleteCandidate(cfg compaction.Config, t table.FileScanTask) bool {
	return len(t.DeleteFiles)+len(t.EqualityDeleteFiles)+len(t.DeletionVectorFiles) >= cfg.DeleteFileThreshold || OverDeleteRatio(t, cfg.DeleteRatioThreshold)
}
