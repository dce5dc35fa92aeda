package plan

import (
	"fmt"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"

	"github.com/icekeeper/icekeeper/shared/binpack"
)

func task(t *testing.T, i int, size int64) table.FileScanTask {
	t.Helper()
	b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, fmt.Sprintf("s3://b/t/data/%03d.parquet", i), iceberg.ParquetFile, nil, nil, nil, 10, size)
	if err != nil {
		t.Fatal(err)
	}
	return table.FileScanTask{File: b.Build()}
}

func TestSplitGroups_KeepsEveryFileOnceWithinTheLimit(t *testing.T) {
	t.Parallel()
	var g compaction.Group
	for i := 0; i < 10; i++ {
		tk := task(t, i, 300)
		g.Tasks = append(g.Tasks, tk)
		g.TotalSizeBytes += 300
	}
	big := task(t, 99, 5000)
	small := compaction.Group{Tasks: []table.FileScanTask{task(t, 50, 10)}, TotalSizeBytes: 10}
	oversized := compaction.Group{Tasks: []table.FileScanTask{big}, TotalSizeBytes: 5000}

	out := SplitGroups([]compaction.Group{g, small, oversized}, 1000)
	seen := map[string]int{}
	for _, o := range out {
		var sum int64
		for _, tk := range o.Tasks {
			seen[tk.File.FilePath()]++
			sum += tk.File.FileSizeBytes()
		}
		if sum != o.TotalSizeBytes {
			t.Fatalf("group total %d, files sum %d", o.TotalSizeBytes, sum)
		}
		if sum > 1000 && len(o.Tasks) > 1 {
			t.Fatalf("group of %d files holds %d bytes, over the 1000 limit", len(o.Tasks), sum)
		}
	}
	if len(seen) != 12 {
		t.Fatalf("%d distinct files, want 12", len(seen))
	}
	for p, n := range seen {
		if n != 1 {
			t.Fatalf("%s in %d groups", p, n)
		}
	}
	if len(out) != 4+1+1 {
		t.Fatalf("%d groups, want 6 (10x300 split into 4, plus 2)", len(out))
	}
}

func TestCompactionConfig_FollowsTheTableTargetSize(t *testing.T) {
	t.Parallel()
	cfg, _, err := CompactionConfig(map[string]string{table.WriteTargetFileSizeBytesKey: "134217728"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TargetFileSizeBytes != 128<<20 || cfg.MinFileSizeBytes != 96<<20 || cfg.MaxFileSizeBytes != 128<<20*9/5 {
		t.Fatalf("config %+v", cfg)
	}
	cfg, _, err = CompactionConfig(map[string]string{table.WriteTargetFileSizeBytesKey: "134217728"}, 64<<20)
	if err != nil || cfg.TargetFileSizeBytes != 64<<20 {
		t.Fatalf("override: %+v %v", cfg, err)
	}
	if _, _, err := CompactionConfig(map[string]string{table.WriteTargetFileSizeBytesKey: "big"}, 0); err == nil {
		t.Fatal("bad property accepted")
	}
}

// Three small files that together do not fill a target file are left by
// Iceberg's default (five input files, or enough content); a table that
// sets icekeeper.compaction.min-input-files to 3 has them rewritten into
// one, and a partition of one small file stays as it is at any setting.
func TestCompactionConfig_TheTablesMinInputFilesDecidesWhenAFewSmallFilesAreRewritten(t *testing.T) {
	t.Parallel()
	const target = 128 << 20
	for _, c := range []struct {
		name   string
		min    string
		files  int
		groups int
	}{
		{"Iceberg's default leaves three", "", 3, 0},
		{"the table's 3 rewrites three", "3", 3, 1},
		{"the table's 3 leaves two", "3", 2, 0},
		{"the table's 1 leaves one file alone", "1", 1, 0},
		{"the table's 1 rewrites two", "1", 2, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			props := map[string]string{table.WriteTargetFileSizeBytesKey: fmt.Sprint(target)}
			if c.min != "" {
				props["icekeeper.compaction.min-input-files"] = c.min
			}
			cfg, _, err := CompactionConfig(props, 0)
			if err != nil {
				t.Fatal(err)
			}
			var tasks []table.FileScanTask
			for i := range c.files {
				tasks = append(tasks, task(t, i, 10<<20))
			}
			p, err := binpack.Plan(cfg, tasks)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Groups) != c.groups {
				t.Fatalf("%d groups, want %d", len(p.Groups), c.groups)
			}
			if c.groups == 1 && len(p.Groups[0].Tasks) != c.files {
				t.Fatalf("the group holds %d of %d files", len(p.Groups[0].Tasks), c.files)
			}
		})
	}
}
