package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/outputs"
	"github.com/icekeeper/icekeeper/shared/plan"
)

// plantLateFile writes a data file named for a fresh attempt of the job's
// group 0, registered while the job ran, as an attempt that registered
// before the job ended and kept writing after the job's clean-up listed the
// data location would. It returns the file's path.
func (e *env) registerLateAttempt(jobID string) string {
	e.t.Helper()
	j := e.job(jobID)
	attempt := outputs.NewAttemptID()
	if err := e.deps.Jobs.RegisterAttempt(e.ctx, jobID, j.Token, 0, attempt); err != nil {
		e.t.Fatalf("register attempt: %v", err)
	}
	return attempt
}

func (e *env) plantFile(attempt string) string {
	e.t.Helper()
	var src string
	for p := range e.dataFilesOnDisk() {
		src = p
		break
	}
	data, err := os.ReadFile(src)
	if err != nil {
		e.t.Fatal(err)
	}
	dst := filepath.Join(filepath.Dir(src), "00000-0-"+attempt+"-00000.parquet")
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		e.t.Fatal(err)
	}
	return dst
}

// TestPlanner_NextJobRemovesFilesEarlierJobsLeftBehind: after a committed
// job and after an aborted one, a file of one of their attempts appears
// that their own clean-up could not see (written after it listed the data
// location). The next job's planning removes it, keeps every file the
// table references, and forgets the jobs it cleaned up after.
func TestPlanner_NextJobRemovesFilesEarlierJobsLeftBehind(t *testing.T) {
	for _, end := range []string{"committed", "aborted"} {
		t.Run(end, func(t *testing.T) {
			e := setup(t)
			e.createTable(smallTable)
			want := e.fingerprint()
			r := e.plan()
			late := e.registerLateAttempt(r.JobID)
			if end == "aborted" {
				body, _ := messages.Encode(messages.AbortJob(r.JobID, "test", ""))
				if err := e.deps.Commits.Send(e.ctx, string(body)); err != nil {
					t.Fatal(err)
				}
				e.drainCommits()
			}
			e.drainTasks()
			e.drainCommits()
			j := e.job(r.JobID)
			if (end == "committed") != (j.State == jobs.Committed) {
				t.Fatalf("job %s (%s)", j.State, j.Reason)
			}
			leaked := e.plantFile(late)

			r2 := e.plan()
			if _, err := os.Stat(leaked); !os.IsNotExist(err) {
				t.Fatalf("the late file %s is still there (plan %s, cleaned %d)", leaked, r2.Outcome, r2.CleanedFiles)
			}
			if r2.CleanedFiles != 1 {
				t.Fatalf("cleaned %d files, want 1", r2.CleanedFiles)
			}
			if r2.Outcome == plan.OutcomePlanned {
				e.drainTasks()
				e.drainCommits()
			}
			if got := e.fingerprint(); got != want {
				t.Fatalf("rows %s, want %s", got, want)
			}
			for p := range e.dataFilesOnDisk() {
				if strings.Contains(p, outputs.AttemptStem(late)) {
					t.Fatalf("file %s of the late attempt left", p)
				}
			}
			// The cleaned-up job is forgotten: the next planning lists nothing.
			l, _, err := e.deps.Leases.Get(e.ctx, e.name())
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range l.PastJobs {
				if id == r.JobID {
					t.Fatalf("job %s is still among the past jobs %v", r.JobID, l.PastJobs)
				}
			}
		})
	}
}
