package plan

import (
	"fmt"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"
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
	cfg, err := CompactionConfig(map[string]string{table.WriteTargetFileSizeBytesKey: "134217728"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TargetFileSizeBytes != 128<<20 || cfg.MinFileSizeBytes != 96<<20 || cfg.MaxFileSizeBytes != 128<<20*9/5 {
		t.Fatalf("config %+v", cfg)
	}
	cfg, err = CompactionConfig(map[string]string{table.WriteTargetFileSizeBytesKey: "134217728"}, 64<<20)
	if err != nil || cfg.TargetFileSizeBytes != 64<<20 {
		t.Fatalf("override: %+v %v", cfg, err)
	}
	if _, err := CompactionConfig(map[string]string{table.WriteTargetFileSizeBytesKey: "big"}, 0); err == nil {
		t.Fatal("bad property accepted")
	}
}
