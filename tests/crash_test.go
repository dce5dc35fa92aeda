package tests

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	lambdaevents "github.com/aws/aws-lambda-go/events"

	"github.com/icekeeper/icekeeper/shared/blob"
	"github.com/icekeeper/icekeeper/shared/harness/localrun"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/rewrite"
	"github.com/icekeeper/icekeeper/shared/stage"
	rewriterstage "github.com/icekeeper/icekeeper/shared/stage/rewriter"
)

// descriptorCrashBlobs is a rewriter's blob store that, once armed, dies
// (panics) at the first descriptor write: the rewriter has written its
// group's data files and is killed (its timeout, out of memory) before it
// records them.
type descriptorCrashBlobs struct {
	*blob.Store
	armed *atomic.Bool
}

func (b descriptorCrashBlobs) Put(ctx context.Context, name string, data []byte) (string, error) {
	if strings.Contains(name, "/descriptors/") && b.armed.CompareAndSwap(true, false) {
		panic(crashPanic{where: "before writing " + name})
	}
	return b.Store.Put(ctx, name, data)
}

// countingRewriter counts each group's deliveries and rewrites.
type countingRewriter struct {
	inner      rewriterstage.TaskRewriter
	mu         sync.Mutex
	deliveries map[int][]int // group: the receive counts it was delivered with
	rewritten  map[int]int
}

func (c *countingRewriter) Handle(ctx context.Context, task messages.Task, n int) (rewrite.Result, error) {
	c.mu.Lock()
	c.deliveries[task.Group] = append(c.deliveries[task.Group], n)
	c.mu.Unlock()
	res, err := c.inner.Handle(ctx, task, n)
	if err == nil && res.Outcome == rewrite.OutcomeRewritten {
		c.mu.Lock()
		c.rewritten[task.Group]++
		c.mu.Unlock()
	}
	return res, err
}

// TestRewriterCrash_TheTaskComesBackWithinTheLeaseAndTheJobCommitsWithoutStartingOver:
// a rewriter dies mid-group (after writing its data files, before its
// descriptor) without answering, its message left in flight with the
// queue's deployed visibility timeout (6 x the 15-minute rewriter timeout).
// Its heartbeat stops with it, so the task comes back within one heartbeat
// (here 1 s; 2 minutes deployed, inside the 30-minute lease), and the same
// job finishes: the other groups' work is kept (each rewritten once, on its
// first delivery), the crashed group is rewritten on its second delivery,
// the job commits with every row once, and the dead attempt's files are
// gone.
func TestRewriterCrash_TheTaskComesBackWithinTheLeaseAndTheJobCommitsWithoutStartingOver(t *testing.T) {
	e := setup(t)
	e.createTable(fourPartitions)
	want := e.fingerprint()
	r := e.plan()
	if r.JobID == "" || r.Groups < 2 {
		t.Fatalf("plan %+v: want a job of several groups", r)
	}
	armed := &atomic.Bool{}
	armed.Store(true)
	rw, err := rewrite.New(rewrite.Settings{MaxAttempts: e.cfg.MaxTaskAttempts, ScanConcurrency: e.cfg.ScanConcurrency, LeaseTTL: e.cfg.LeaseTTL},
		e.deps.Jobs, e.deps.Leases, descriptorCrashBlobs{Store: e.deps.Blobs, armed: armed}, e.deps.Commits, e.deps.Tables, discardLog, nil, rewrite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	counter := &countingRewriter{inner: rw, deliveries: map[int][]int{}, rewritten: map[int]int{}}
	h := rewriterstage.Handler{Rewrite: counter, Requeue: e.deps.Tasks, Heartbeat: time.Second}.Handle
	ctx := asFunction(e.ctx, "Rewriter")

	// The first task, received as the event source receives it, kills its
	// rewriter: no answer, so nobody deletes or releases the message.
	msgs, err := e.deps.Tasks.Receive(ctx, 1, 0, int32((6 * 15 * time.Minute).Seconds()))
	if err != nil || len(msgs) != 1 {
		t.Fatalf("receive the first task: %v (%d messages)", err, len(msgs))
	}
	crashedGroup := -1
	func() {
		defer func() {
			if p := recover(); p == nil {
				t.Fatal("the rewriter did not crash")
			} else if _, ok := p.(crashPanic); !ok {
				panic(p)
			}
		}()
		rec := lambdaevents.SQSMessage{MessageId: msgs[0].ID, ReceiptHandle: msgs[0].ReceiptHandle, Body: msgs[0].Body, Attributes: msgs[0].Attributes, EventSource: "aws:sqs"}
		var task messages.Task
		if err := messages.Decode([]byte(rec.Body), &task); err != nil {
			t.Fatal(err)
		}
		crashedGroup = task.Group
		if n := stage.ReceiveCount(rec); n != 1 {
			t.Fatalf("first delivery has receive count %d", n)
		}
		_, _ = h(ctx, lambdaevents.SQSEvent{Records: []lambdaevents.SQSMessage{rec}})
	}()

	// Rewriters keep taking tasks: the other groups now, and the crashed
	// one as soon as it is visible again. Without the heartbeat it would
	// stay invisible for the 90-minute visibility timeout, and the bound
	// below (far above one heartbeat, far below the timeout) fails.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := localrun.Drain(ctx, e.deps.Tasks, h, 1, 0); err != nil {
			t.Fatalf("drain tasks: %v", err)
		}
		counter.mu.Lock()
		done := counter.rewritten[crashedGroup] > 0 && len(counter.rewritten) == r.Groups
		counter.mu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the crashed rewriter's task (group %d) did not come back: deliveries %v\n%s", crashedGroup, counter.deliveries, e.diagnose(r.JobID))
		}
		time.Sleep(200 * time.Millisecond)
	}
	for g := 0; g < r.Groups; g++ {
		d := counter.deliveries[g]
		switch {
		case g == crashedGroup && (len(d) < 2 || d[0] != 1 || d[1] != 2):
			t.Fatalf("crashed group %d deliveries %v, want its second right after the crash", g, d)
		case g != crashedGroup && (len(d) == 0 || d[0] != 1):
			t.Fatalf("group %d deliveries %v, want its first", g, d)
		}
		if counter.rewritten[g] != 1 {
			t.Fatalf("group %d rewritten %d times, want once (deliveries %v)", g, counter.rewritten[g], counter.deliveries)
		}
	}
	e.drainCommits()
	// The same job commits: nothing started over.
	e.requireCommitted(r.JobID, want)
	e.requireOnlyReferencedJobFiles(r.JobID)
}
