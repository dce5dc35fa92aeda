package tests

import (
	"strconv"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/plan"
)

// TestPipeline_AFileScanPlanningSplitsIsRewrittenOnce: iceberg-go's scan
// planning splits a Parquet file larger than read.split.target-size at
// its row groups into several scan tasks (table/scan_splits.go). A
// compaction must still take each file whole, in one group: split tasks
// in two groups would each rewrite part of the file and both remove it.
func TestPipeline_AFileScanPlanningSplitsIsRewrittenOnce(t *testing.T) {
	e := setup(t)
	e.createTable(sampletable.Options{FormatVersion: 2, Partitions: 1, Files: 10, RowsPerFile: 2000, PositionDeletes: true,
		Properties: map[string]string{
			table.ParquetRowGroupLimitKey: "700",  // three row groups per file
			table.ReadSplitTargetSizeKey:  "1024", // every file is split at them
		}})
	tasks, err := e.load().Scan().PlanFiles(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]bool{}
	var size int64
	for _, task := range tasks {
		files[task.File.FilePath()] = true
		size = max(size, task.File.FileSizeBytes())
	}
	// Groups of five files (or of five split tasks, which then end in
	// the middle of a file).
	txn := e.load().NewTransaction()
	if err := txn.SetProperties(iceberg.Properties{table.WriteTargetFileSizeBytesKey: strconv.FormatInt(size*11/2, 10)}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	if len(tasks) <= len(files) {
		t.Fatalf("scan planning made %d tasks of %d files: the test needs split files", len(tasks), len(files))
	}
	before := e.fingerprint()

	r := e.plan()
	if r.Outcome != plan.OutcomePlanned {
		t.Fatalf("plan outcome %s (%s)", r.Outcome, r.Reason)
	}
	if r.InputFiles != int64(len(files)) {
		t.Fatalf("job input files = %d, want %d (each file once)", r.InputFiles, len(files))
	}
	e.drainTasks()
	e.drainCommits()
	e.requireCommitted(r.JobID, before)
}

// TestDeletes_AFileScanPlanningSplitsIsRewrittenOnce: a rewrite-deletes
// job over files that scan planning splits counts and carries each data
// file once: the same rows, one position delete file per partition, and
// the job's rows are the files' rows, not a multiple of them.
func TestDeletes_AFileScanPlanningSplitsIsRewrittenOnce(t *testing.T) {
	e := setup(t)
	o := sampletable.Options{FormatVersion: 2, Partitions: 2, Files: 3, RowsPerFile: 900, Properties: map[string]string{
		table.ParquetRowGroupLimitKey: "300",
		table.ReadSplitTargetSizeKey:  "1024",
	}}
	e.createTable(o)
	e.positionDeletesInEveryPartition(o, 6)
	want := e.fingerprint()
	tasks, err := e.load().Scan().PlanFiles(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]int64{}
	for _, task := range tasks {
		files[task.File.FilePath()] = task.File.Count()
	}
	if len(tasks) <= len(files) {
		t.Fatalf("scan planning made %d tasks of %d files: the test needs split files", len(tasks), len(files))
	}
	var rows int64
	for _, n := range files {
		rows += n
	}

	r := e.planDeleteRewrite()
	if r.Groups != o.Partitions {
		t.Fatalf("%d groups, want %d", r.Groups, o.Partitions)
	}
	if j := e.job(r.JobID); j.InputRows != rows {
		t.Fatalf("job input rows %d, want the data files' %d", j.InputRows, rows)
	}
	e.drainTasks()
	e.drainCommits()
	e.requireCommitted(r.JobID, want)
	for k, n := range e.deleteLayout().posFiles {
		if n != 1 {
			t.Errorf("partition %s has %d position delete files after, want 1", k, n)
		}
	}
}
