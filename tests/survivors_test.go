package tests

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/commit"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/outputs"
	"github.com/icekeeper/icekeeper/shared/plan"
)

// survivorTable makes a table where a job leaves files out: per partition,
// two large files (at the target size, so the planner keeps them) and six
// small ones (candidates), with position deletes (or DVs) and equality
// deletes that apply to both. It returns the large files' paths.
func (e *env) survivorTable(version int) map[string]bool {
	e.t.Helper()
	const parts = 2
	e.createTable(sampletable.Options{FormatVersion: version, Partitions: parts, Files: 2, RowsPerFile: 3000})
	large := map[string]bool{}
	var largest int64
	for _, t := range e.liveTasks() {
		large[t.File.FilePath()] = true
		largest = max(largest, t.File.FileSizeBytes())
	}
	// The large files are right-sized for this target: not candidates.
	txn := e.load().NewTransaction()
	if err := txn.SetProperties(iceberg.Properties{table.WriteTargetFileSizeBytesKey: strconv.FormatInt(largest, 10)}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := txn.Commit(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	id := int64(2 * parts * 3000)
	for f := 0; f < 6; f++ {
		if _, err := sampletable.AppendRows(e.ctx, e.load(), id, parts, 20); err != nil {
			e.t.Fatal(err)
		}
		id += parts * 20
	}
	// Deletes in both the large and the small files.
	var pos, eq []int64
	for i := int64(1); i < id; i += 97 {
		pos = append(pos, i)
	}
	for i := int64(5); i < id; i += 89 {
		eq = append(eq, i)
	}
	for i := int64(2*parts*3000 + 3); i < id; i += 7 {
		pos = append(pos, i)
	}
	if _, err := sampletable.DeleteByPosition(e.ctx, e.load(), pos); err != nil {
		e.t.Fatal(err)
	}
	regionOf := func(id int64) string {
		if id < 2*parts*3000 {
			return sampletable.Region(int(id%(parts*3000)) / 3000)
		}
		return sampletable.Region(int((id-2*parts*3000)%(parts*20)) / 20)
	}
	if _, err := sampletable.DeleteByEquality(e.ctx, e.load(), eq, regionOf); err != nil {
		e.t.Fatal(err)
	}
	return large
}

// TestPipeline_FilesLeftOutKeepTheirDeletes: the job rewrites the small
// files only; the deletes that still apply to the large files it leaves out
// must stay in the table (an equality delete file or position delete that
// the committer removed because the rewrite applied it would resurrect rows
// of the survivors).
func TestPipeline_FilesLeftOutKeepTheirDeletes(t *testing.T) {
	for _, version := range []int{2, 3} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			e := setup(t)
			large := e.survivorTable(version)
			before := e.stats()
			if before.EqualityDeleteFiles == 0 || before.PositionDeleteFiles+before.DeletionVectors == 0 {
				t.Fatalf("sample has no deletes of each kind: %+v", before)
			}
			r := e.compactAndRequireSame()
			if r.SkippedFiles < len(large) {
				t.Fatalf("the planner skipped %d files, want the %d large ones", r.SkippedFiles, len(large))
			}
			live := map[string]bool{}
			for _, task := range e.liveTasks() {
				live[task.File.FilePath()] = true
				if large[task.File.FilePath()] && len(task.EqualityDeleteFiles) == 0 {
					t.Fatalf("large file %s lost its equality deletes", task.File.FilePath())
				}
			}
			for p := range large {
				if !live[p] {
					t.Fatalf("large file %s was rewritten; the test needs it left out", p)
				}
			}
			if after := e.stats(); after.EqualityDeleteFiles == 0 {
				t.Fatalf("every equality delete file was removed although the survivors need them: %+v", after)
			}
		})
	}
}

// TestCommitter_DeadDeleteRemovedByAnotherToolEndsTheJobPromptly: while the
// job runs, another tool removes an equality delete file that the job also
// removes as dead (it applied to the job's inputs). Committing would hide
// rows the other tool made visible again, and iceberg-go refuses to remove
// the file twice on every retry ("cannot remove delete files that do not
// belong to the table"). The job is aborted on its first commit attempt,
// with the reason, and the rows are as the other tool left them.
func TestCommitter_DeadDeleteRemovedByAnotherToolEndsTheJobPromptly(t *testing.T) {
	e := setup(t)
	e.createTable(sampletable.Options{FormatVersion: 2, Partitions: 1, Files: 6, RowsPerFile: 100, EqualityDeletes: true})
	before := e.fingerprint()
	r := e.plan()
	e.drainTasks()
	var eqFile iceberg.DataFile
	for _, task := range e.liveTasks() {
		for _, d := range task.EqualityDeleteFiles {
			eqFile = d
		}
	}
	if eqFile == nil {
		t.Fatal("no equality delete in the sample")
	}
	txn := e.load().NewTransaction()
	rw := txn.NewRewrite(nil)
	rw.DeleteFile(eqFile)
	if err := rw.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	want := e.fingerprint()
	if want.Rows <= before.Rows {
		t.Fatalf("removing the equality delete brought no row back (%d -> %d)", before.Rows, want.Rows)
	}
	res, err := e.committer.Handle(e.ctx, messages.CommitJob(r.JobID), 1)
	if err != nil {
		t.Fatalf("first delivery: %v", err)
	}
	if res.Outcome != commit.OutcomeAborted || !strings.Contains(res.Reason, "removed delete file") {
		t.Fatalf("outcome %s (%s), want aborted on the first delivery", res.Outcome, res.Reason)
	}
	if j := e.job(r.JobID); j.State != jobs.Aborted {
		t.Fatalf("job %s", j.State)
	}
	if got := e.fingerprint(); got != want {
		t.Fatalf("rows %s, want %s", got, want)
	}
	if left := e.jobFilesOnDisk(r.JobID); len(left) > 0 {
		t.Fatalf("aborted job left %d files", len(left))
	}
	if r2 := e.plan(); r2.Outcome == plan.OutcomeLeaseHeld {
		t.Fatal("lease not released")
	}
}

// fencedJobs makes the heartbeat right before the catalog commit fail as
// if another committer had taken the job over.
type fencedJobs struct {
	commit.Jobs
	fence bool
}

func (f *fencedJobs) Heartbeat(ctx context.Context, id, committer string) error {
	if f.fence {
		return fmt.Errorf("%w: taken over", jobs.ErrStateConflict)
	}
	return f.Jobs.Heartbeat(ctx, id, committer)
}

// slowCatalog delays every catalog commit.
type slowCatalog struct {
	commit.Catalog
	delay time.Duration
}

func (s slowCatalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	tbl, err := s.Catalog.LoadTable(ctx, ident)
	if err != nil {
		return nil, err
	}
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), tbl.FS, slowCommits{cat: s.Catalog.(table.CatalogIO), delay: s.delay}), nil
}

type slowCommits struct {
	cat   table.CatalogIO
	delay time.Duration
}

func (s slowCommits) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	return s.cat.LoadTable(ctx, ident)
}

func (s slowCommits) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
		return nil, "", ctx.Err()
	}
	return s.cat.CommitTable(ctx, ident, reqs, updates)
}

// TestCommitter_EveryCatalogCommitIsFencedAndHasADeadline: a committer that
// lost the committing job right before its catalog commit sends nothing;
// one whose catalog commit outlasts the deadline gives up on it (the job is
// redelivered, not committed late) and the table is unchanged.
func TestCommitter_EveryCatalogCommitIsFencedAndHasADeadline(t *testing.T) {
	t.Run("fenced", func(t *testing.T) {
		e := setup(t)
		e.createTable(smallTable)
		want := e.fingerprint()
		r := e.plan()
		e.drainTasks()
		fj := &fencedJobs{Jobs: e.deps.Jobs, fence: true}
		c, err := commit.New(commit.Settings{LeaseTTL: time.Minute, MaxRetries: 3, Backoff: time.Millisecond, CommitTakeover: time.Hour},
			e.cat, fj, e.deps.Leases, e.deps.Blobs, e.deps.Tables, nil, nil, commit.Options{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Handle(e.ctx, messages.CommitJob(r.JobID), 1)
		if !errors.Is(err, commit.ErrBusy) {
			t.Fatalf("err %v, want ErrBusy", err)
		}
		if n := e.jobSnapshots(r.JobID); n != 0 {
			t.Fatal("a fenced committer committed")
		}
		if got := e.fingerprint(); got != want {
			t.Fatalf("rows %s, want %s", got, want)
		}
		if j := e.job(r.JobID); j.State != jobs.Committing {
			t.Fatalf("job %s, want still committing (owned by the other committer)", j.State)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		e := setup(t)
		e.createTable(smallTable)
		want := e.fingerprint()
		r := e.plan()
		e.drainTasks()
		c, err := commit.New(commit.Settings{LeaseTTL: time.Minute, MaxRetries: 3, Backoff: time.Millisecond, CommitTakeover: 400 * time.Millisecond, CommitDeadline: 100 * time.Millisecond, MaxAttempts: 3},
			slowCatalog{Catalog: e.cat, delay: 2 * time.Second}, e.deps.Jobs, e.deps.Leases, e.deps.Blobs, e.deps.Tables, nil, nil, commit.Options{})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = c.Handle(e.ctx, messages.CommitJob(r.JobID), 1)
		if err == nil || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err %v, want the deadline", err)
		}
		if took := time.Since(start); took > 1500*time.Millisecond {
			t.Fatalf("the committer waited %s for the catalog, past its deadline", took)
		}
		if n := e.jobSnapshots(r.JobID); n != 0 {
			t.Fatal("committed after the deadline")
		}
		if got := e.fingerprint(); got != want {
			t.Fatalf("rows %s, want %s", got, want)
		}
	})
	t.Run("deadline must be shorter than the takeover window", func(t *testing.T) {
		e := setup(t)
		_, err := commit.New(commit.Settings{LeaseTTL: time.Minute, CommitTakeover: time.Minute, CommitDeadline: time.Minute},
			e.cat, e.deps.Jobs, e.deps.Leases, e.deps.Blobs, e.deps.Tables, nil, nil, commit.Options{})
		if err == nil || !strings.Contains(err.Error(), "shorter than the takeover") {
			t.Fatalf("err %v", err)
		}
	})
}

// TestCommitter_RefusesATamperedDescriptor: a winning descriptor that
// names a file outside the table's data location, a file another attempt
// wrote, an input file the group did not plan, or another group, fails
// the job with the reason (terminal: retrying cannot help); nothing is
// committed and the rows are unchanged.
func TestCommitter_RefusesATamperedDescriptor(t *testing.T) {
	// withPath returns f at another path.
	withPath := func(t *testing.T, f iceberg.DataFile, spec iceberg.PartitionSpec, path string) iceberg.DataFile {
		b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentData, path, f.FileFormat(), f.Partition(), nil, nil, f.Count(), f.FileSizeBytes())
		if err != nil {
			t.Fatal(err)
		}
		return b.Build()
	}
	cases := map[string]struct {
		tamper func(t *testing.T, d *messages.Descriptor, files []iceberg.DataFile, spec iceberg.PartitionSpec, other messages.Descriptor) []iceberg.DataFile
		want   string
	}{
		"a new file outside the table": {func(t *testing.T, d *messages.Descriptor, files []iceberg.DataFile, spec iceberg.PartitionSpec, _ messages.Descriptor) []iceberg.DataFile {
			files[0] = withPath(t, files[0], spec, "file:///elsewhere/"+filepath.Base(files[0].FilePath()))
			return files
		}, "outside the table's data location"},
		"a new file of another attempt": {func(t *testing.T, d *messages.Descriptor, files []iceberg.DataFile, spec iceberg.PartitionSpec, other messages.Descriptor) []iceberg.DataFile {
			p := files[0].FilePath()
			files[0] = withPath(t, files[0], spec, strings.Replace(p, outputs.AttemptStem(d.Attempt), outputs.AttemptStem(other.Attempt), 1))
			return files
		}, "is not named for attempt"},
		"an input the group did not plan": {func(t *testing.T, d *messages.Descriptor, files []iceberg.DataFile, _ iceberg.PartitionSpec, other messages.Descriptor) []iceberg.DataFile {
			d.InputPaths[0] = other.InputPaths[0]
			return files
		}, "or different ones"},
		"another group": {func(t *testing.T, d *messages.Descriptor, files []iceberg.DataFile, _ iceberg.PartitionSpec, _ messages.Descriptor) []iceberg.DataFile {
			d.Group++
			return files
		}, "descriptor is for job"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			e := setup(t)
			e.createTable(smallTable)
			want := e.fingerprint()
			r := e.plan()
			if r.Groups < 2 {
				t.Fatalf("planned %d groups, want at least 2", r.Groups)
			}
			e.drainTasks()
			groups, err := e.deps.Jobs.Groups(e.ctx, r.JobID)
			if err != nil {
				t.Fatal(err)
			}
			d, other := e.descriptor(groups[0].DescriptorKey), e.descriptor(groups[1].DescriptorKey)
			pinned, err := e.deps.Tables.Open(e.ctx, e.ident, messages.Pin{MetadataLocation: e.job(r.JobID).MetadataLocation, SnapshotID: r.SnapshotID, SequenceNumber: e.job(r.JobID).SequenceNumber})
			if err != nil {
				t.Fatal(err)
			}
			files, err := messages.DecodeDataFiles(pinned.Metadata(), d.SpecID, d.NewFiles)
			if err != nil || len(files) == 0 {
				t.Fatalf("descriptor files: %v %v", files, err)
			}
			spec := pinned.Metadata().PartitionSpecByID(int(files[0].SpecID()))
			files = c.tamper(t, &d, files, *spec, other)
			if d.NewFiles, err = messages.EncodeDataFiles(pinned.Metadata(), files); err != nil {
				t.Fatal(err)
			}
			body, _ := messages.Encode(d)
			if _, err := e.deps.Blobs.Put(e.ctx, strings.TrimPrefix(groups[0].DescriptorKey, e.cfg.Prefix+"/"), body); err != nil {
				t.Fatal(err)
			}
			e.drainCommits()
			j := e.job(r.JobID)
			if j.State != jobs.Failed || !strings.Contains(j.Reason, c.want) {
				t.Fatalf("job %s (%s), want failed for %q", j.State, j.Reason, c.want)
			}
			if got := e.fingerprint(); got != want || e.jobSnapshots(r.JobID) != 0 {
				t.Fatalf("rows %s (want %s), job snapshots %d", got, want, e.jobSnapshots(r.JobID))
			}
		})
	}
}
