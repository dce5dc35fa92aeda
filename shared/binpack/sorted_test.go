package binpack

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"
)

const idField = 1

var idKey = SortKey{FieldID: idField, Type: iceberg.PrimitiveTypes.Int64}

type fileSpec struct {
	part    int32
	lo, hi  int64
	size    int64
	noBound bool
	deletes bool
}

func le64(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }

func sortedTasks(t *testing.T, files []fileSpec) []table.FileScanTask {
	t.Helper()
	spec := iceberg.NewPartitionSpecID(1, iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "p", Transform: iceberg.IdentityTransform{}})
	var out []table.FileScanTask
	for i, f := range files {
		path := fmt.Sprintf("s3://b/t/data/%04d.parquet", i)
		b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentData, path, iceberg.ParquetFile, map[int]any{1000: f.part}, nil, nil, 100, f.size)
		if err != nil {
			t.Fatal(err)
		}
		if !f.noBound {
			b.LowerBoundValues(map[int][]byte{idField: le64(f.lo)}).UpperBoundValues(map[int][]byte{idField: le64(f.hi)})
		}
		task := table.FileScanTask{File: b.Build(), Start: 0, Length: f.size}
		if f.deletes {
			// 40 of the file's 100 rows: over the delete ratio.
			d, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentPosDeletes, path+".del", iceberg.ParquetFile, map[int]any{1000: f.part}, nil, nil, 40, 10)
			if err != nil {
				t.Fatal(err)
			}
			task.DeleteFiles = append(task.DeleteFiles, d.ReferencedDataFile(path).Build())
		}
		out = append(out, task)
	}
	return out
}

func sortCfg(target int64) compaction.Config {
	cfg := compaction.DefaultConfig()
	cfg.TargetFileSizeBytes = target
	cfg.MinFileSizeBytes = target * 3 / 4
	cfg.MaxFileSizeBytes = target * 18 / 10
	return cfg
}

// groupOf maps each file path to its group (-1: left alone).
func groupOf(tasks []table.FileScanTask, p SortedPlan) map[string]int {
	m := map[string]int{}
	for _, t := range tasks {
		m[t.File.FilePath()] = -1
	}
	for g, grp := range p.Groups {
		for _, t := range grp.Tasks {
			m[t.File.FilePath()] = g
		}
	}
	return m
}

func TestPlanSorted_GroupsAreDisjointAndNoOverlapIsLeftBehind(t *testing.T) {
	const target = 1000
	r := rand.New(rand.NewPCG(11, 12))
	for run := range 300 {
		var files []fileSpec
		for range 1 + r.IntN(30) {
			lo := int64(r.IntN(200))
			f := fileSpec{part: int32(r.IntN(3)), lo: lo, hi: lo + int64(r.IntN(30)), size: int64(50 + r.IntN(1200))}
			f.noBound = r.IntN(40) == 0
			f.deletes = r.IntN(10) == 0
			files = append(files, f)
		}
		tasks := sortedTasks(t, files)
		specs := map[string]fileSpec{}
		for i, task := range tasks {
			specs[task.File.FilePath()] = files[i]
		}
		cfg := sortCfg(target)
		p, err := PlanSorted(cfg, idKey, tasks, 1<<40, false)
		if err != nil {
			t.Fatal(err)
		}
		if p.Oversized != 0 {
			t.Fatalf("run %d: oversized %d with no group limit", run, p.Oversized)
		}
		g := groupOf(tasks, p)
		if len(g) != len(files) || len(tasks) != len(files) {
			t.Fatalf("run %d: %d tasks, %d files, want %d", run, len(tasks), len(g), len(files))
		}
		overlap := func(a, b fileSpec) bool {
			return a.part == b.part && (a.noBound || b.noBound || (a.lo < b.hi && b.lo < a.hi))
		}
		// A group's span: the union of its files' ranges.
		for gi, grp := range p.Groups {
			var span fileSpec
			for k, task := range grp.Tasks {
				f := specs[task.File.FilePath()]
				if k == 0 {
					span = f
				}
				span.noBound = span.noBound || f.noBound
				span.lo, span.hi = min(span.lo, f.lo), max(span.hi, f.hi)
			}
			for path, other := range g {
				if other != gi && overlap(span, specs[path]) {
					t.Fatalf("run %d: group %d spans [%d,%d] (unbounded %v) of partition %d, and %s (group %d) overlaps it: %+v", run, gi, span.lo, span.hi, span.noBound, span.part, path, other, specs[path])
				}
			}
		}
		for a, ga := range g {
			fa := specs[a]
			if ga >= 0 {
				continue
			}
			alone := true
			for b, gb := range g {
				if a != b && overlap(fa, specs[b]) {
					alone = false
					if gb < 0 {
						t.Fatalf("run %d: overlapping files %s and %s both left alone", run, a, b)
					}
				}
			}
			if alone && fa.deletes {
				t.Fatalf("run %d: %s has deletes over the ratio and was left alone", run, a)
			}
		}
	}
}

func TestPlanSorted_SmallFilesThatOverlapNothingArePackedByBinpacksRules(t *testing.T) {
	var files []fileSpec
	for i := range 4 {
		files = append(files, fileSpec{lo: int64(i * 10), hi: int64(i*10 + 5), size: 100})
	}
	p, err := PlanSorted(sortCfg(1000), idKey, sortedTasks(t, files), 1<<40, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Groups) != 0 {
		t.Fatalf("4 small disjoint files (fewer than min-input-files 5) were planned: %d groups", len(p.Groups))
	}
	files = append(files, fileSpec{lo: 50, hi: 55, size: 100})
	if p, err = PlanSorted(sortCfg(1000), idKey, sortedTasks(t, files), 1<<40, false); err != nil {
		t.Fatal(err)
	}
	if len(p.Groups) != 1 || len(p.Groups[0].Tasks) != 5 {
		t.Fatalf("5 small disjoint files: %d groups, want them packed in one", len(p.Groups))
	}
}

func TestPlanSorted_TouchingSortedFilesAreLeftAlone(t *testing.T) {
	// What a sorted rewrite leaves: full files whose ranges touch where a
	// key repeats across a file boundary, and a small remainder.
	tasks := sortedTasks(t, []fileSpec{{lo: 0, hi: 100, size: 1000}, {lo: 100, hi: 200, size: 1000}, {lo: 200, hi: 250, size: 300}})
	p, err := PlanSorted(sortCfg(1000), idKey, tasks, 1<<40, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Groups) != 0 || p.SkippedFiles != 3 {
		t.Fatalf("groups %d, skipped %d: a sorted partition was planned again", len(p.Groups), p.SkippedFiles)
	}
}

// TestPlanSorted_ARunLargerThanOneRewriterOnlyHasItsCandidatesRewritten:
// a run one rewriter cannot sort whole is not rewritten in overlapping
// pieces (the next plan would find the same run, forever): its full-size
// files are left alone and only its small files are packed, in key order.
func TestPlanSorted_ARunLargerThanOneRewriterOnlyHasItsCandidatesRewritten(t *testing.T) {
	var files []fileSpec
	for i := range 10 {
		files = append(files, fileSpec{lo: int64(i), hi: 1000, size: 900}) // right-sized
	}
	p, err := PlanSorted(sortCfg(1000), idKey, sortedTasks(t, files), 2000, false)
	if err != nil {
		t.Fatal(err)
	}
	if p.Oversized != 1 || len(p.Groups) != 0 || p.SkippedFiles != 10 {
		t.Fatalf("oversized %d, groups %d, skipped %d: want the run left alone", p.Oversized, len(p.Groups), p.SkippedFiles)
	}
	for i := range 15 {
		files = append(files, fileSpec{lo: int64(500 + i), hi: 600, size: 100}) // small
	}
	tasks := sortedTasks(t, files)
	size := map[string]int64{}
	for _, task := range tasks {
		size[task.File.FilePath()] = task.File.FileSizeBytes()
	}
	if p, err = PlanSorted(sortCfg(1000), idKey, tasks, 2000, false); err != nil {
		t.Fatal(err)
	}
	var grouped int
	for path, g := range groupOf(tasks, p) {
		if g >= 0 {
			grouped++
			if size[path] != 100 {
				t.Errorf("a right-sized file of the oversized run was rewritten: %s", path)
			}
		}
	}
	if p.Oversized != 1 || grouped != 15 || len(p.Groups) != 2 {
		t.Fatalf("oversized %d, %d files grouped in %d groups: want the 15 small ones, in groups up to the target", p.Oversized, grouped, len(p.Groups))
	}
	for _, grp := range p.Groups {
		if grp.TotalSizeBytes > 1000 {
			t.Errorf("group of %d bytes, over the target", grp.TotalSizeBytes)
		}
	}
}

// TestPlanSortedExchanging_ARunLargerThanOneRewriterIsOneExchangeGroup:
// the same oversized run, with exchanges, is planned whole as one group
// listed in Exchanges; a small run beside it is an ordinary group, and a
// lone sorted file is left alone.
func TestPlanSortedExchanging_ARunLargerThanOneRewriterIsOneExchangeGroup(t *testing.T) {
	var files []fileSpec
	for i := range 10 {
		files = append(files, fileSpec{lo: int64(i), hi: 1000, size: 900})
	}
	files = append(files, fileSpec{lo: 2000, hi: 2100, size: 100}, fileSpec{lo: 2050, hi: 2200, size: 100}, fileSpec{lo: 5000, hi: 5001, size: 900})
	tasks := sortedTasks(t, files)
	p, err := PlanSortedExchanging(sortCfg(1000), idKey, tasks, 2000)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Groups) != 2 || len(p.Exchanges) != 1 || p.Oversized != 0 || p.SkippedFiles != 1 {
		t.Fatalf("groups %d, exchanges %v, oversized %d, skipped %d: want the run as one exchange group, the pair as a group, the lone file left", len(p.Groups), p.Exchanges, p.Oversized, p.SkippedFiles)
	}
	x := p.Groups[p.Exchanges[0]]
	if len(x.Tasks) != 10 || x.TotalSizeBytes != 9000 {
		t.Errorf("exchange group of %d files, %d bytes; want the 10 files of the run", len(x.Tasks), x.TotalSizeBytes)
	}
}

func TestPlanSorted_AColumnWithoutAnOrderIsRefused(t *testing.T) {
	_, err := PlanSorted(sortCfg(1000), SortKey{FieldID: 9, Type: &iceberg.ListType{ElementID: 10, Element: iceberg.PrimitiveTypes.Int32}}, nil, 1<<40, false)
	if err == nil {
		t.Fatal("a list column was accepted as a sort key")
	}
}

// TestPlanSorted_OnlyCandidatesNeedsWhatBinpackingNeeds: a z-order's run
// (files overlapping by design) is rewritten for enough small files or
// for deletes, not for its own last, smaller file.
func TestPlanSorted_OnlyCandidatesNeedsWhatBinpackingNeeds(t *testing.T) {
	var files []fileSpec
	for i := range 6 {
		files = append(files, fileSpec{lo: int64(i), hi: 100, size: 900})
	}
	files = append(files, fileSpec{lo: 50, hi: 60, size: 200}) // the last, smaller file
	p, err := PlanSorted(sortCfg(1000), idKey, sortedTasks(t, files), 1<<40, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Groups) != 0 {
		t.Fatalf("%d groups: an overlapping run with one small file was rewritten", len(p.Groups))
	}
	if p, err = PlanSorted(sortCfg(1000), idKey, sortedTasks(t, files), 1<<40, false); err != nil || len(p.Groups) != 1 {
		t.Fatalf("without onlyCandidates: %d groups (%v), want the run", len(p.Groups), err)
	}
	withDeletes := append([]fileSpec(nil), files...)
	withDeletes[0].deletes = true
	if p, err = PlanSorted(sortCfg(1000), idKey, sortedTasks(t, withDeletes), 1<<40, true); err != nil || len(p.Groups) != 1 || len(p.Groups[0].Tasks) != 7 {
		t.Fatalf("a file over the delete ratio: %+v (%v), want the whole run", p.Groups, err)
	}
	for range 4 {
		files = append(files, fileSpec{lo: 70, hi: 80, size: 100})
	}
	if p, err = PlanSorted(sortCfg(1000), idKey, sortedTasks(t, files), 1<<40, true); err != nil || len(p.Groups) != 1 || len(p.Groups[0].Tasks) != 11 {
		t.Fatalf("five small files: %+v (%v), want the whole run", p.Groups, err)
	}
}
