package tests

import (
	"context"
	"errors"
	"testing"

	lambdaevents "github.com/aws/aws-lambda-go/events"

	"github.com/icekeeper/icekeeper/shared/harness/localrun"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/plan"
)

// TestCycle_InterruptedWhileRewritingEndsTheJobAndRemovesItsFiles: the
// operator presses Ctrl-C (the cycle's context is cancelled) after one
// group was rewritten and while another is being rewritten. The cycle ends
// the job, removes every file its attempts wrote, releases the lease and
// reports ErrInterrupted; the table is untouched.
func TestCycle_InterruptedWhileRewritingEndsTheJobAndRemovesItsFiles(t *testing.T) {
	e := setup(t)
	e.createTable(smallTable)
	want := e.fingerprint()
	filesBefore := e.dataFilesOnDisk()
	st, _, err := e.deps.LocalStages(e.cat)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	calls := 0
	inner := st.Rewriter
	st.Rewriter = func(hctx context.Context, ev lambdaevents.SQSEvent) (lambdaevents.SQSEventResponse, error) {
		calls++
		if calls == 2 {
			cancel() // Ctrl-C while this group is being rewritten
		}
		return inner(hctx, ev)
	}
	c, err := localrun.RunCycle(ctx, st, e.name(), "test")
	if !errors.Is(err, localrun.ErrInterrupted) {
		t.Fatalf("err %v, want ErrInterrupted", err)
	}
	if calls < 2 {
		t.Fatalf("only %d rewriter calls: the interruption came too late to test", calls)
	}
	if c.Removed == 0 {
		t.Fatal("no file reported removed although a group was rewritten")
	}
	j := e.job(c.Plan.JobID)
	if j.State != jobs.Failed {
		t.Fatalf("job %s (%s), want failed", j.State, j.Reason)
	}
	if left := e.jobFilesOnDisk(c.Plan.JobID); len(left) > 0 {
		t.Fatalf("the interrupted job left %d files: %v", len(left), left)
	}
	for p := range e.dataFilesOnDisk() {
		if !filesBefore[p] {
			t.Fatalf("new file %s left behind", p)
		}
	}
	if got := e.fingerprint(); got != want {
		t.Fatalf("rows %s, want %s", got, want)
	}
	if r := e.plan(); r.Outcome == plan.OutcomeLeaseHeld {
		t.Fatal("lease not released")
	}
}
