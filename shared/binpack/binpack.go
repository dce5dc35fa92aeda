// Package binpack groups a snapshot's scan tasks into compaction file
// groups exactly as iceberg-go's compaction planner
// (compaction.Config.PlanCompaction) does, without copying a task.
//
// PlanCompaction copies every candidate task into a per-partition slice and
// again into its bins: at a million files that is two to three copies of a
// 130-byte task each, a quarter of the planner's peak memory. Plan decides on
// task indices instead and then reorders the tasks in place so that each
// group's tasks are contiguous; a group's Tasks is a sub-slice of the
// caller's slice.
//
// Invariants (TestPlan_MatchesIcebergGosPlanner compares the two on random
// tables):
//   - the same candidates: a file is rewritten when it carries at least
//     DeleteFileThreshold delete files, when its file-scoped deletes shadow
//     at least DeleteRatioThreshold of its rows, or when it is smaller than
//     MinFileSizeBytes and not larger than MaxFileSizeBytes;
//   - the same buckets: one per partition spec and partition tuple, in the
//     order the partitions first appear (PlanInto departs from this for
//     files a compaction moves to another spec: one bucket per spec, as
//     Iceberg Java's rewrite_data_files groups them);
//   - the same bins: iceberg-go's PackEnd (first fit over at most
//     PackingLookback open bins, walking the candidates from the end);
//   - the same drops: a bucket or bin of fewer than MinInputFiles files is
//     skipped, except (PlanInto; not iceberg-go) that what a bucket's bins
//     leave out is one more group when it is two or more files of more
//     than the target size together, Iceberg Java's "enough content", or
//     (Rules.FileCountGoal) two or more files of a bucket holding the
//     goal times its optimal file count or more.
//
// Plan packs whole files. iceberg-go's scan planning splits a Parquet file
// larger than read.split.target-size at its row groups into several tasks
// (table/scan_splits.go); PlanCompaction would weigh each split as the
// whole file and could put the splits of one file into different groups,
// each rewriting part of it and both removing it. WholeFiles joins them
// first.
//
// What a group contains decides only what is rewritten together; which
// deletes apply to a file stays iceberg-go's scan planning (the tasks).
package binpack

import (
	"fmt"
	"slices"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"
)

// Plan returns the compaction plan cfg.PlanCompaction would return for
// the whole files of tasks (WholeFiles). It reorders tasks in place: the
// groups' tasks first, in plan order (each group's Tasks a sub-slice of
// tasks), then every other file's task, then (when files were split)
// cleared tasks.
func Plan(cfg compaction.Config, tasks []table.FileScanTask) (compaction.Plan, error) {
	return PlanInto(cfg, tasks, EachOwnSpec, Rules{})
}

// Rules are PlanInto's departures from iceberg-go's planner that the
// table's settings decide.
type Rules struct {
	// FileCountGoal, when positive, is how many times its optimal file
	// count a bucket may hold (the bytes of all its files over the target
	// size, rounded up, at least one): a bucket that has reached it has
	// the two or more candidates that MinInputFiles leaves out rewritten
	// anyway. Zero: off (an owner who set the table's min-input-files:
	// theirs stands).
	//
	// Reaching the goal, not passing it, is the trigger: the writers'
	// next commit adds at least a file to the bucket it writes, so a
	// bucket left at the goal is over it at that commit (a partition of
	// optimum 1 holding 2 files holds 3), and package pacing ends a busy
	// table's cooldown when the table is expected to reach the goal, so
	// the visit then finds it at the goal, not past it.
	//
	// Without it a partition keeps up to MinInputFiles-1 small files
	// beside its full ones for good: with Iceberg's 5, a partition of one
	// target's worth of data holds five files, two and a half times its
	// optimum (the soak's file-count goal, docs/DESIGN.md section 12). A
	// group it makes writes what it read into one file (less than a
	// target, or enough content had grouped it), so the bucket is not
	// rewritten again without new small files.
	FileCountGoal int
}

// EachOwnSpec is PlanInto's into for a compaction that writes each file's
// rows back in the file's own partition spec.
const EachOwnSpec = -1

// PlanInto is Plan for a compaction that writes its groups in partition
// spec into (EachOwnSpec: in each file's own spec, which is Plan).
//
// A file of another spec than into is bucketed by its spec alone, not by
// its partition: its rows may belong to several partitions of into
// anyway, and after a partition spec change the old spec's partitions
// each hold too few files to be worth a group (MinInputFiles), so they
// would never move. This is what Iceberg Java's rewrite_data_files does
// (RewriteFileGroupPlanner.groupByPartition: "Treating all such files as
// un-partitioned and grouping them together helps to minimize new files
// made"), except that Java buckets the files of every other spec
// together and PlanInto keeps one spec a bucket, since a group's scan
// tasks are read with one spec (messages.PlanGroup.SpecID).
func PlanInto(cfg compaction.Config, tasks []table.FileScanTask, into int, rules Rules) (compaction.Plan, error) {
	return planInto(cfg, tasks, into, true, rules)
}

// planInto is PlanInto; with enoughContent false it is exactly
// iceberg-go's planner (the comparison test's subject).
//
// enoughContent is Iceberg Java's rule (apache/iceberg
// core/src/main/java/org/apache/iceberg/actions/SizeBasedFileRewritePlanner.java,
// enoughContent and enoughInputFiles:
// a group is rewritten when it has MinInputFiles files, or "enough
// content": more than one file and more input than the target size):
// the candidates of a bucket that iceberg-go's bins leave out (bins of at
// most the target size with fewer than MinInputFiles files, or a bucket
// of fewer candidates) become one more group when there are at least two
// of them and together they exceed the target size. Without it a file
// between a fifth and three quarters of the target was small (debt in the
// health report) and never compacted: five such files never fit one bin
// (the soak harness found tables drifting to 4x their optimal file count;
// docs/DESIGN.md section 12). Its output is files of the target size and
// a remainder, fewer small files than it read, so a partition is not
// rewritten over and over without new small files.
func planInto(cfg compaction.Config, tasks []table.FileScanTask, into int, enoughContent bool, rules Rules) (compaction.Plan, error) {
	if err := cfg.Validate(); err != nil {
		return compaction.Plan{}, fmt.Errorf("invalid compaction config: %w", err)
	}
	tasks = WholeFiles(tasks)
	plan := compaction.Plan{TotalInputFiles: len(tasks)}
	for i := range tasks {
		plan.TotalInputBytes += tasks[i].File.FileSizeBytes()
	}

	type bucket struct {
		key        string
		candidates []int32
		files      int   // every file of the bucket, candidate or not
		bytes      int64 // their sizes
	}
	index := map[string]int{}
	var buckets []bucket
	for i := range tasks {
		key := bucketKey(tasks[i].File, into)
		b, ok := index[key]
		if !ok {
			b = len(buckets)
			index[key] = b
			buckets = append(buckets, bucket{key: key})
		}
		buckets[b].files++
		buckets[b].bytes += tasks[i].File.FileSizeBytes()
		if !Candidate(cfg, tasks[i]) {
			plan.SkippedFiles++
			continue
		}
		buckets[b].candidates = append(buckets[b].candidates, int32(i))
	}

	weight := func(i int32) int64 { return tasks[i].File.FileSizeBytes() }
	var chosen []span
	for _, b := range buckets {
		var left []int32 // candidates no bin took
		if len(b.candidates) < int(cfg.MinInputFiles) {
			plan.SkippedFiles += len(b.candidates)
			left = b.candidates
		} else {
			for _, bin := range packEnd(b.candidates, cfg.TargetFileSizeBytes, int(cfg.PackingLookback), weight) {
				if len(bin) < int(cfg.MinInputFiles) {
					plan.SkippedFiles += len(bin)
					left = append(left, bin...)
					continue
				}
				chosen = append(chosen, span{key: b.key, indices: bin})
			}
		}
		if !enoughContent || len(left) < 2 {
			continue
		}
		var size int64
		for _, i := range left {
			size += weight(i)
		}
		atGoal := rules.FileCountGoal > 0 && b.files >= rules.FileCountGoal*Optimum(b.bytes, cfg.TargetFileSizeBytes)
		if size > cfg.TargetFileSizeBytes || atGoal {
			left = slices.Clone(left)
			slices.Sort(left)
			plan.SkippedFiles -= len(left)
			chosen = append(chosen, span{key: b.key, indices: left})
		}
	}

	groupChosen(cfg, tasks, chosen, &plan)
	return plan, nil
}

// Optimum is the fewest files bytes of data fit at the target size: the
// bytes over the target, rounded up, and at least one.
func Optimum(bytes, target int64) int {
	if target <= 0 || bytes <= target {
		return 1
	}
	return int((bytes + target - 1) / target)
}

// span is a group being chosen: its partition key and task indices.
type span struct {
	key     string
	indices []int32
	// overlaps (PlanSorted): the span holds a run of two or more files.
	overlaps bool
	// exchange (PlanSortedExchanging): the span is one run too large for
	// one rewriter, for a two-stage sort.
	exchange bool
}

// groupChosen reorders tasks in place, the chosen spans' tasks first,
// group by group, then the rest in their original order, and appends the
// groups (sub-slices of tasks) and their estimates to plan.
func groupChosen(cfg compaction.Config, tasks []table.FileScanTask, chosen []span, plan *compaction.Plan) {
	order := make([]int32, 0, len(tasks))
	taken := make([]bool, len(tasks))
	for _, s := range chosen {
		for _, i := range s.indices {
			order = append(order, i)
			taken[i] = true
		}
	}
	for i := range tasks {
		if !taken[i] {
			order = append(order, int32(i))
		}
	}
	permute(tasks, order)
	at := 0
	for _, s := range chosen {
		g := compaction.Group{PartitionKey: s.key, Tasks: tasks[at : at+len(s.indices) : at+len(s.indices)]}
		at += len(s.indices)
		for _, t := range g.Tasks {
			g.TotalSizeBytes += t.File.FileSizeBytes()
			g.DeleteFileCount += len(t.DeleteFiles) + len(t.EqualityDeleteFiles) + len(t.DeletionVectorFiles)
		}
		plan.EstOutputFiles += max(1, int((g.TotalSizeBytes+cfg.TargetFileSizeBytes-1)/cfg.TargetFileSizeBytes))
		plan.EstOutputBytes += g.TotalSizeBytes
		plan.Groups = append(plan.Groups, g)
	}
}

// WholeFiles joins, in place, the split scan tasks of each file into one
// task that reads the whole file (Start 0, Length the file's size) and
// returns the shortened slice; the tasks after it are cleared. The splits
// of a file carry the same deletes (iceberg-go copies the task to split
// it), which the joined task keeps.
func WholeFiles(tasks []table.FileScanTask) []table.FileScanTask {
	var seen map[string]int // path -> index in the output, split files only
	n := 0
	for i := range tasks {
		t := tasks[i]
		if size := t.File.FileSizeBytes(); t.Start != 0 || t.Length != size {
			path := t.File.FilePath()
			if seen == nil {
				seen = map[string]int{}
			}
			if _, ok := seen[path]; ok {
				continue
			}
			seen[path] = n
			t.Start, t.Length = 0, size
		}
		tasks[n] = t
		n++
	}
	clear(tasks[n:])
	return tasks[:n]
}

// Grouped is the number of tasks at the front of a slice Plan reordered
// that belong to its groups; the tasks after them were left alone.
func Grouped(p compaction.Plan) int {
	n := 0
	for _, g := range p.Groups {
		n += len(g.Tasks)
	}
	return n
}

// Candidate reports whether iceberg-go's compaction planner would consider
// the task's file for rewriting (its Config.isCandidate).
func Candidate(cfg compaction.Config, t table.FileScanTask) bool {
	if len(t.DeleteFiles)+len(t.EqualityDeleteFiles)+len(t.DeletionVectorFiles) >= cfg.DeleteFileThreshold {
		return true
	}
	if OverDeleteRatio(t, cfg.DeleteRatioThreshold) {
		return true
	}
	size := t.File.FileSizeBytes()
	return size <= cfg.MaxFileSizeBytes && size < cfg.MinFileSizeBytes
}

// OverDeleteRatio mirrors iceberg-go's compaction planner (and Iceberg
// Java's BinPackRewriteFilePlanner.tooHighDeleteRatio): the record counts
// of the task's file-scoped deletes (deletion vectors, position deletes that
// target only this file), capped at the file's records, reach ratio of
// them. A ratio of 0 disables the rule.
func OverDeleteRatio(t table.FileScanTask, ratio float64) bool {
	records := t.File.Count()
	if ratio <= 0 || records <= 0 {
		return false
	}
	var deleted int64
	for _, ds := range [][]iceberg.DataFile{t.DeletionVectorFiles, t.DeleteFiles} {
		for _, d := range ds {
			if FileScoped(d) {
				deleted += d.Count()
			}
		}
	}
	return float64(min(deleted, records))/float64(records) >= ratio
}

// filePathField is the file_path column of a position delete file.
var filePathField = func() int {
	f, _ := iceberg.PositionalDeleteSchema.FindFieldByName("file_path")
	return f.ID
}()

// FileScoped reports whether a delete file applies to exactly one data
// file: a position delete (or deletion vector) with a referenced data file,
// or with equal file_path bounds (Iceberg's ContentFileUtil.isFileScoped
// and referencedDataFile).
func FileScoped(d iceberg.DataFile) bool {
	if d.ContentType() != iceberg.EntryContentPosDeletes {
		return false
	}
	if ref := d.ReferencedDataFile(); ref != nil && *ref != "" {
		return true
	}
	lo, hi := d.LowerBoundValues()[filePathField], d.UpperBoundValues()[filePathField]
	return len(lo) > 0 && string(lo) == string(hi)
}

// bucketKey is iceberg-go's partition bucket key: the spec id and the
// sorted partition tuple ("3:1=a;2=7;", "0:_" when unpartitioned), or,
// for a file that moves to spec into (into >= 0, another spec than the
// file's), the spec id alone ("3:*", see PlanInto).
func bucketKey(f iceberg.DataFile, into int) string {
	if into >= 0 && int(f.SpecID()) != into {
		return fmt.Sprintf("%d:*", f.SpecID())
	}
	part := f.Partition()
	if len(part) == 0 {
		return fmt.Sprintf("%d:_", f.SpecID())
	}
	ids := make([]int, 0, len(part))
	for id := range part {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	b := fmt.Appendf(nil, "%d:", f.SpecID())
	for _, id := range ids {
		b = fmt.Appendf(b, "%d=%v;", id, part[id])
	}
	return string(b)
}

// packEnd is iceberg-go's SlicePacker.PackEnd without largest-bin-first:
// the items are offered last to first, each to the first open bin it fits
// (a bin's weight may not exceed target), a new bin opened when none fits;
// when more than lookback bins are open the oldest is closed. The bins and
// their items are then reversed, so they read in the items' order.
func packEnd(items []int32, target int64, lookback int, weight func(int32) int64) [][]int32 {
	type bin struct {
		weight int64
		items  []int32
	}
	var open []bin
	var out [][]int32
	for k := len(items) - 1; k >= 0; k-- {
		item := items[k]
		w := weight(item)
		placed := false
		for b := range open {
			if open[b].weight+w <= target {
				open[b].weight += w
				open[b].items = append(open[b].items, item)
				placed = true
				break
			}
		}
		if placed {
			continue
		}
		open = append(open, bin{weight: w, items: []int32{item}})
		if len(open) > lookback {
			out = append(out, open[0].items)
			open = open[1:]
		}
	}
	for _, b := range open {
		out = append(out, b.items)
	}
	slices.Reverse(out)
	for _, items := range out {
		slices.Reverse(items)
	}
	return out
}

// permute reorders tasks in place so that tasks[k] becomes the task that
// was at order[k]; order is a permutation of 0..len(tasks)-1.
func permute(tasks []table.FileScanTask, order []int32) {
	done := make([]bool, len(tasks))
	for start := range tasks {
		if done[start] {
			continue
		}
		saved := tasks[start]
		k := start
		for {
			done[k] = true
			from := int(order[k])
			if from == start {
				tasks[k] = saved
				break
			}
			tasks[k] = tasks[from]
			k = from
		}
	}
}
