package binpack

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"
)

// randomTasks builds a table's worth of scan tasks: files in a few
// partitions of two specs, of sizes around the target, some carrying
// position deletes (file-scoped by reference or by file_path bounds, or
// partition-scoped), equality deletes and deletion vectors.
func randomTasks(t *testing.T, r *rand.Rand, n int, target int64) []table.FileScanTask {
	t.Helper()
	spec := iceberg.NewPartitionSpecID(1, iceberg.PartitionField{SourceIDs: []int{1}, FieldID: 1000, Name: "p", Transform: iceberg.IdentityTransform{}})
	build := func(spec iceberg.PartitionSpec, content iceberg.ManifestEntryContent, format iceberg.FileFormat, path string, part map[int]any, rows, size int64, edit func(*iceberg.DataFileBuilder)) iceberg.DataFile {
		b, err := iceberg.NewDataFileBuilder(spec, content, path, format, part, nil, nil, rows, size)
		if err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			edit(b)
		}
		return b.Build()
	}
	filePath, _ := iceberg.PositionalDeleteSchema.FindFieldByName("file_path")
	tasks := make([]table.FileScanTask, 0, n)
	for i := range n {
		sp, part := *iceberg.UnpartitionedSpec, map[int]any(nil)
		if r.IntN(3) > 0 {
			sp, part = spec, map[int]any{1000: int32(r.IntN(4))}
		}
		path := fmt.Sprintf("s3://b/t/data/%05d.parquet", i)
		var size int64
		switch r.IntN(5) {
		case 4:
			size = target / int64(2+2*r.IntN(2)) // halves and quarters fill a bin exactly
		case 0:
			size = target * int64(80+r.IntN(120)) / 100 // right-sized to oversized
		case 1:
			size = target * 2 // oversized
		default:
			size = 1 + r.Int64N(target*3/4) // small
		}
		rows := 1 + r.Int64N(10_000)
		task := table.FileScanTask{File: build(sp, iceberg.EntryContentData, iceberg.ParquetFile, path, part, rows, size, nil)}
		for d := range r.IntN(7) {
			dpath := fmt.Sprintf("s3://b/t/data/del-%05d-%d.parquet", i, d)
			count := r.Int64N(rows + 1)
			switch r.IntN(5) {
			case 0: // file-scoped by reference
				task.DeleteFiles = append(task.DeleteFiles, build(sp, iceberg.EntryContentPosDeletes, iceberg.ParquetFile, dpath, part, count, 100, func(b *iceberg.DataFileBuilder) { b.ReferencedDataFile(path) }))
			case 1: // file-scoped by file_path bounds
				bound := []byte(path)
				task.DeleteFiles = append(task.DeleteFiles, build(sp, iceberg.EntryContentPosDeletes, iceberg.ParquetFile, dpath, part, count, 100, func(b *iceberg.DataFileBuilder) {
					b.LowerBoundValues(map[int][]byte{filePath.ID: bound}).UpperBoundValues(map[int][]byte{filePath.ID: bound})
				}))
			case 2: // partition-scoped
				task.DeleteFiles = append(task.DeleteFiles, build(sp, iceberg.EntryContentPosDeletes, iceberg.ParquetFile, dpath, part, count, 100, nil))
			case 3:
				task.EqualityDeleteFiles = append(task.EqualityDeleteFiles, build(sp, iceberg.EntryContentEqDeletes, iceberg.ParquetFile, dpath, part, count, 100, func(b *iceberg.DataFileBuilder) { b.EqualityFieldIDs([]int{1}) }))
			case 4:
				if len(task.DeletionVectorFiles) == 0 {
					task.DeletionVectorFiles = append(task.DeletionVectorFiles, build(sp, iceberg.EntryContentPosDeletes, iceberg.PuffinFile, dpath, part, count, 100, func(b *iceberg.DataFileBuilder) { b.ReferencedDataFile(path).ContentOffset(4).ContentSizeInBytes(40) }))
				}
			}
		}
		tasks = append(tasks, task)
	}
	return tasks
}

func paths(tasks []table.FileScanTask) []string {
	out := make([]string, len(tasks))
	for i, t := range tasks {
		out[i] = t.File.FilePath()
	}
	return out
}

// TestPlan_MatchesIcebergGosPlanner: on random tables and settings, Plan
// chooses the same groups of the same files, in the same order, and
// reports the same counts as iceberg-go's compaction planner.
func TestPlan_MatchesIcebergGosPlanner(t *testing.T) {
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 7))
		target := int64(1+r.IntN(64)) << 20
		cfg := compaction.DefaultConfig()
		cfg.TargetFileSizeBytes = target
		cfg.MinFileSizeBytes = target * 3 / 4
		cfg.MaxFileSizeBytes = target * 9 / 5
		cfg.MinInputFiles = uint(r.IntN(6))
		cfg.PackingLookback = uint(r.IntN(4))
		if r.IntN(2) == 0 {
			cfg.PackingLookback = 128
		}
		cfg.DeleteFileThreshold = 1 + r.IntN(6)
		cfg.DeleteRatioThreshold = []float64{0, 0.1, 0.3, 1}[r.IntN(4)]
		tasks := randomTasks(t, r, r.IntN(400), target)

		want, err := cfg.PlanCompaction(slices.Clone(tasks))
		if err != nil {
			t.Fatal(err)
		}
		got, err := planInto(cfg, tasks, EachOwnSpec, false, Rules{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Groups) != len(want.Groups) {
			t.Fatalf("seed %d: %d groups, iceberg-go %d", seed, len(got.Groups), len(want.Groups))
		}
		for i := range want.Groups {
			g, w := got.Groups[i], want.Groups[i]
			if !slices.Equal(paths(g.Tasks), paths(w.Tasks)) || g.PartitionKey != w.PartitionKey || g.TotalSizeBytes != w.TotalSizeBytes || g.DeleteFileCount != w.DeleteFileCount {
				t.Fatalf("seed %d group %d:\n got %q %v (%d bytes, %d deletes)\nwant %q %v (%d bytes, %d deletes)", seed, i,
					g.PartitionKey, paths(g.Tasks), g.TotalSizeBytes, g.DeleteFileCount, w.PartitionKey, paths(w.Tasks), w.TotalSizeBytes, w.DeleteFileCount)
			}
		}
		got.Groups, want.Groups = nil, nil
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("seed %d: plan %+v, iceberg-go %+v", seed, got, want)
		}
	}
}

// TestPlan_ReordersTasksInPlaceWithoutLosingAny: the groups are sub-slices
// of the caller's slice, at its front, and the slice still holds every
// task once.
func TestPlan_ReordersTasksInPlaceWithoutLosingAny(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cfg := compaction.DefaultConfig()
	tasks := randomTasks(t, r, 500, cfg.TargetFileSizeBytes)
	before := paths(tasks)
	p, err := Plan(cfg, tasks)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Groups) == 0 {
		t.Fatal("no groups: the test needs some")
	}
	at := 0
	for i, g := range p.Groups {
		if &g.Tasks[0] != &tasks[at] {
			t.Fatalf("group %d is not the sub-slice at %d of the caller's tasks", i, at)
		}
		at += len(g.Tasks)
	}
	if at != Grouped(p) {
		t.Fatalf("Grouped = %d, groups hold %d", Grouped(p), at)
	}
	after := paths(tasks)
	slices.Sort(before)
	slices.Sort(after)
	if !slices.Equal(before, after) {
		t.Fatal("reordering lost or duplicated a task")
	}
}

// TestPlanInto_FilesOfAnOlderSpecAreGroupedAcrossTheirPartitions: after a
// partition spec change, the old spec's partitions each hold fewer files
// than MinInputFiles; moving them into the current spec groups them by
// spec, as Iceberg Java's rewrite_data_files does, while the current
// spec's files stay grouped by partition and each group holds one spec.
func TestPlanInto_FilesOfAnOlderSpecAreGroupedAcrossTheirPartitions(t *testing.T) {
	old := iceberg.NewPartitionSpecID(0, iceberg.PartitionField{SourceIDs: []int{1}, FieldID: 1000, Name: "p", Transform: iceberg.IdentityTransform{}})
	cur := iceberg.NewPartitionSpecID(1, iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1001, Name: "q", Transform: iceberg.IdentityTransform{}})
	file := func(spec iceberg.PartitionSpec, part map[int]any, i int) table.FileScanTask {
		b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentData, fmt.Sprintf("s3://b/t/data/%d-%03d.parquet", spec.ID(), i), iceberg.ParquetFile, part, nil, nil, 10, 1000)
		if err != nil {
			t.Fatal(err)
		}
		return table.FileScanTask{File: b.Build()}
	}
	var tasks []table.FileScanTask
	for i := range 9 { // 3 files in each of 3 partitions of the old spec
		tasks = append(tasks, file(old, map[int]any{1000: int32(i % 3)}, i))
	}
	for i := range 4 { // 2 files in each of 2 partitions of the current spec
		tasks = append(tasks, file(cur, map[int]any{1001: int32(i % 2)}, i))
	}
	cfg := compaction.DefaultConfig()
	cfg.MinInputFiles = 5

	own, err := Plan(cfg, slices.Clone(tasks))
	if err != nil {
		t.Fatal(err)
	}
	if len(own.Groups) != 0 {
		t.Fatalf("each partition keeping its spec: %d groups, want none (no partition has %d files)", len(own.Groups), cfg.MinInputFiles)
	}

	into, err := PlanInto(cfg, slices.Clone(tasks), cur.ID(), Rules{})
	if err != nil {
		t.Fatal(err)
	}
	if len(into.Groups) != 1 {
		t.Fatalf("moving into spec %d: %d groups, want the old spec's one", cur.ID(), len(into.Groups))
	}
	g := into.Groups[0]
	if len(g.Tasks) != 9 {
		t.Fatalf("the old spec's group holds %d files, want all 9 of its three partitions", len(g.Tasks))
	}
	for _, task := range g.Tasks {
		if task.File.SpecID() != int32(old.ID()) {
			t.Errorf("group of spec %d holds %s of spec %d", old.ID(), task.File.FilePath(), task.File.SpecID())
		}
	}
	if into.SkippedFiles != 4 {
		t.Errorf("skipped %d files, want the current spec's 4 (2 a partition)", into.SkippedFiles)
	}

	// A file already in the spec written keeps its partition's bucket:
	// writing into the old spec groups nothing (3 files a partition) but
	// the current spec's 4 files, which move, as one group of 4 < 5.
	back, err := PlanInto(cfg, slices.Clone(tasks), old.ID(), Rules{})
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Groups) != 0 {
		t.Fatalf("moving into spec %d: %d groups, want none", old.ID(), len(back.Groups))
	}
}

// TestPlan_SmallFilesThatFillMoreThanATargetAreGroupedAsIcebergJavaDoes:
// files between a fifth and three quarters of the target never make a bin
// of MinInputFiles (iceberg-go drops them); Iceberg Java rewrites a group
// of more than one file with more content than the target, and so does
// Plan. Fewer files, or less content, stay.
func TestPlan_SmallFilesThatFillMoreThanATargetAreGroupedAsIcebergJavaDoes(t *testing.T) {
	spec := iceberg.NewPartitionSpecID(1, iceberg.PartitionField{SourceIDs: []int{1}, FieldID: 1000, Name: "p", Transform: iceberg.IdentityTransform{}})
	cfg := compaction.DefaultConfig()
	cfg.TargetFileSizeBytes = 100 << 20
	cfg.MinFileSizeBytes = cfg.TargetFileSizeBytes * 3 / 4
	cfg.MaxFileSizeBytes = cfg.TargetFileSizeBytes * 9 / 5
	cfg.MinInputFiles = 5
	file := func(part, i int, mb int64) table.FileScanTask {
		b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentData, fmt.Sprintf("s3://b/t/data/%d-%03d.parquet", part, i), iceberg.ParquetFile, map[int]any{1000: int32(part)}, nil, nil, 10, mb<<20)
		if err != nil {
			t.Fatal(err)
		}
		return table.FileScanTask{File: b.Build()}
	}
	cases := []struct {
		name   string
		sizes  []int64 // MB, in one partition
		groups int
	}{
		{"four files of half the target: iceberg-go's bins hold two each, both dropped", []int64{50, 50, 50, 50}, 1},
		{"six files of 60%: one bin each", []int64{60, 60, 60, 60, 60, 60}, 1},
		{"two files of 60%: more than a target together", []int64{60, 60}, 1},
		{"two files of 40%: less than a target", []int64{40, 40}, 0},
		{"one file of 70%: alone", []int64{70}, 0},
		{"a right-sized file and one small one: the small one alone", []int64{100, 30}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var tasks []table.FileScanTask
			for i, mb := range c.sizes {
				tasks = append(tasks, file(0, i, mb))
			}
			ice, err := cfg.PlanCompaction(slices.Clone(tasks))
			if err != nil {
				t.Fatal(err)
			}
			if len(ice.Groups) != 0 {
				t.Fatalf("iceberg-go plans %d groups: the case does not show the difference", len(ice.Groups))
			}
			p, err := Plan(cfg, tasks)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Groups) != c.groups {
				t.Fatalf("%d groups, want %d", len(p.Groups), c.groups)
			}
			var grouped int
			for _, g := range p.Groups {
				grouped += len(g.Tasks)
			}
			if c.groups > 0 && grouped != len(c.sizes) {
				t.Errorf("%d of %d files grouped, want all", grouped, len(c.sizes))
			}
			if p.SkippedFiles != len(c.sizes)-grouped {
				t.Errorf("skipped %d, want %d", p.SkippedFiles, len(c.sizes)-grouped)
			}
		})
	}
}

// TestPlanInto_APartitionAtItsFileCountGoalCompactsItsSmallFiles: with
// Rules.FileCountGoal, the small files MinInputFiles leaves out of a
// partition holding the goal times its optimal file count or more are one
// more group (left at the goal, the writers' next file takes it over); a
// partition below the goal, or a table whose owner set min-input-files
// (the goal off), keeps them.
func TestPlanInto_APartitionAtItsFileCountGoalCompactsItsSmallFiles(t *testing.T) {
	cfg := goalConfig()
	cases := []struct {
		name   string
		sizes  []int64 // MB, in one partition
		rules  Rules
		groups int
		files  int // files grouped
	}{
		{"three small files: optimum 1, three files", []int64{10, 10, 10}, Rules{FileCountGoal: 2}, 1, 3},
		{"two small files: twice the optimum, at the goal", []int64{10, 10}, Rules{FileCountGoal: 2}, 1, 2},
		{"one small file: a group of one is never made", []int64{10}, Rules{FileCountGoal: 2}, 0, 0},
		{"a right-sized file and two small ones: 3 files for an optimum of 2, below the goal", []int64{100, 10, 10}, Rules{FileCountGoal: 2}, 0, 0},
		{"a right-sized file and three small ones: 4 files for an optimum of 2, at the goal", []int64{100, 10, 10, 10}, Rules{FileCountGoal: 2}, 1, 3},
		{"a right-sized file and one small one: at the optimum", []int64{100, 10}, Rules{FileCountGoal: 2}, 0, 0},
		{"a right-sized file and four small ones: 5 files for an optimum of 2", []int64{100, 10, 10, 10, 10}, Rules{FileCountGoal: 2}, 1, 4},
		{"a right-sized file, two large ones and one small one: one small file stays", []int64{100, 170, 170, 10}, Rules{FileCountGoal: 2}, 0, 0},
		{"the goal off: three small files stay, as in iceberg-go", []int64{10, 10, 10}, Rules{}, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var tasks []table.FileScanTask
			for i, mb := range c.sizes {
				tasks = append(tasks, goalFile(t, 0, i, mb<<20))
			}
			p, err := PlanInto(cfg, tasks, EachOwnSpec, c.rules)
			if err != nil {
				t.Fatal(err)
			}
			grouped := 0
			for _, g := range p.Groups {
				grouped += len(g.Tasks)
				for _, task := range g.Tasks {
					if !Candidate(cfg, task) {
						t.Errorf("grouped %s of %d bytes, not a candidate", task.File.FilePath(), task.File.FileSizeBytes())
					}
				}
			}
			if len(p.Groups) != c.groups || grouped != c.files {
				t.Fatalf("%d groups of %d files, want %d of %d", len(p.Groups), grouped, c.groups, c.files)
			}
		})
	}
}

// TestPlanInto_TheFileCountGoalSettlesWithoutNewFiles: planning again and
// again without new writes (small and right-sized files; a large file's
// split is another rule), each group rewritten into files of the target
// size and a remainder, every round lowers the table's small files and
// keeps its bytes, and within a few rounds nothing more is planned, with
// every partition within the goal or holding fewer than two small files.
// (A rule that rewrote its own output would never settle.) A failure
// names its seed, which replays it.
func TestPlanInto_TheFileCountGoalSettlesWithoutNewFiles(t *testing.T) {
	cfg := goalConfig()
	rules := Rules{FileCountGoal: 2}
	for seed := range uint64(500) {
		r := rand.New(rand.NewPCG(seed, 34))
		var tasks []table.FileScanTask
		next := 0
		parts := 1 + r.IntN(4)
		for part := range parts {
			for range r.IntN(12) {
				mb := []int64{1 + r.Int64N(74), 75 + r.Int64N(105)}[r.IntN(2)]
				tasks = append(tasks, goalFile(t, part, next, mb<<20))
				next++
			}
		}
		settled := false
		for round := 0; round < 8; round++ {
			smallBefore, bytesBefore := smallFiles(cfg, tasks), totalBytes(tasks)
			p, err := PlanInto(cfg, slices.Clone(tasks), EachOwnSpec, rules)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Groups) == 0 {
				settled = true
				break
			}
			tasks = rewriteGroups(t, cfg, tasks, p.Groups, &next)
			if smallFiles(cfg, tasks) >= smallBefore || totalBytes(tasks) != bytesBefore {
				t.Fatalf("seed %d round %d: %d small files of %d bytes in all became %d of %d", seed, round, smallBefore, bytesBefore, smallFiles(cfg, tasks), totalBytes(tasks))
			}
		}
		if !settled {
			t.Fatalf("seed %d: still planning after 8 rounds without new files", seed)
		}
		for part := range parts {
			var files, small int
			var bytes int64
			for _, task := range tasks {
				if task.File.Partition()[1000] == int32(part) {
					files++
					bytes += task.File.FileSizeBytes()
					if Candidate(cfg, task) {
						small++
					}
				}
			}
			if files > rules.FileCountGoal*Optimum(bytes, cfg.TargetFileSizeBytes) && small >= 2 {
				t.Errorf("seed %d partition %d: settled at %d files for an optimum of %d, %d of them small", seed, part, files, Optimum(bytes, cfg.TargetFileSizeBytes), small)
			}
		}
	}
}

func TestOptimum_IsTheTargetFilesTheBytesNeedAndAtLeastOne(t *testing.T) {
	for _, tc := range []struct {
		bytes, target int64
		want          int
	}{{0, 100, 1}, {1, 100, 1}, {100, 100, 1}, {101, 100, 2}, {1000, 0, 1}} {
		if got := Optimum(tc.bytes, tc.target); got != tc.want {
			t.Errorf("Optimum(%d, %d) = %d, want %d", tc.bytes, tc.target, got, tc.want)
		}
	}
}

// goalConfig is a 100 MB target with Iceberg's other defaults.
func goalConfig() compaction.Config {
	cfg := compaction.DefaultConfig()
	cfg.TargetFileSizeBytes = 100 << 20
	cfg.MinFileSizeBytes = cfg.TargetFileSizeBytes * 3 / 4
	cfg.MaxFileSizeBytes = cfg.TargetFileSizeBytes * 9 / 5
	cfg.MinInputFiles = 5
	return cfg
}

var goalSpec = iceberg.NewPartitionSpecID(1, iceberg.PartitionField{SourceIDs: []int{1}, FieldID: 1000, Name: "p", Transform: iceberg.IdentityTransform{}})

// goalFile is data file i of a partition, of size bytes.
func goalFile(t *testing.T, part, i int, size int64) table.FileScanTask {
	t.Helper()
	b, err := iceberg.NewDataFileBuilder(goalSpec, iceberg.EntryContentData, fmt.Sprintf("s3://b/t/data/%d-%05d.parquet", part, i), iceberg.ParquetFile, map[int]any{1000: int32(part)}, nil, nil, 10, size)
	if err != nil {
		t.Fatal(err)
	}
	return table.FileScanTask{File: b.Build()}
}

func smallFiles(cfg compaction.Config, tasks []table.FileScanTask) int {
	n := 0
	for _, task := range tasks {
		if Candidate(cfg, task) {
			n++
		}
	}
	return n
}

func totalBytes(tasks []table.FileScanTask) int64 {
	var n int64
	for _, task := range tasks {
		n += task.File.FileSizeBytes()
	}
	return n
}

// rewriteGroups replaces each group's files by what a rewriter writes of
// them: files of the target size and one remainder.
func rewriteGroups(t *testing.T, cfg compaction.Config, tasks []table.FileScanTask, groups []compaction.Group, next *int) []table.FileScanTask {
	t.Helper()
	gone := map[string]bool{}
	var out []table.FileScanTask
	for _, g := range groups {
		part := int(g.Tasks[0].File.Partition()[1000].(int32))
		for _, task := range g.Tasks {
			gone[task.File.FilePath()] = true
		}
		for left := g.TotalSizeBytes; left > 0; left -= cfg.TargetFileSizeBytes {
			out = append(out, goalFile(t, part, *next, min(left, cfg.TargetFileSizeBytes)))
			*next++
		}
	}
	for _, task := range tasks {
		if !gone[task.File.FilePath()] {
			out = append(out, task)
		}
	}
	return out
}
