package tests

// The icekeeper side of the safety harness (see safety_test.go): the
// planner, the rewriters and the committer built over the harness's
// environment exactly as the stages wire them (packages stage/planner,
// stage/rewriter, stage/committer), except that every store, queue
// and catalog call they make goes through a wrapper that can
//
//   - crash the stage before or after its n-th call (a panic, recovered by
//     the harness's delivery as a Lambda that died there: the message is
//     not acknowledged and is delivered again, nothing after the crash
//     point runs, and whatever the call did before a crash "after" it
//     stays done);
//   - run another tool's change right before the committer's catalog
//     commit, after the committer loaded the table and decided (a
//     before-commit hook, made of the catalog wrapper: no production code
//     needed one).
//
// Two more of each are built with a clock moved on: a planner whose lease
// store sees every term as expired (a planner arriving after the lease
// TTL, which takes the table over and asks the committer to end the
// previous job), and a committer past the commit takeover window (the
// redelivered request that may take a silent committer's job over).

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	lambdaevents "github.com/aws/aws-lambda-go/events"

	"github.com/icekeeper/icekeeper/shared/blob"
	"github.com/icekeeper/icekeeper/shared/commit"
	"github.com/icekeeper/icekeeper/shared/deletions"
	"github.com/icekeeper/icekeeper/shared/harness/localrun"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/lease"
	"github.com/icekeeper/icekeeper/shared/listing"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/plan"
	"github.com/icekeeper/icekeeper/shared/queue"
	"github.com/icekeeper/icekeeper/shared/rewrite"
	"github.com/icekeeper/icekeeper/shared/stage"
	committerstage "github.com/icekeeper/icekeeper/shared/stage/committer"
	rewriterstage "github.com/icekeeper/icekeeper/shared/stage/rewriter"
)

// crashPanic is what a crashing wrapper panics with; the harness's
// delivery recovers it (any other panic is re-raised).
type crashPanic struct{ where string }

// crasher counts a stage's dependency calls in one run and crashes it at
// the call it is armed for.
type crasher struct {
	// at is the call to crash at (0: none); after: once it returned.
	at    int
	after bool
	// n counts the calls of the current run; where names the call crashed
	// at ("" when none was).
	n     int
	where string
	// hookAt is the call before which hook runs (0: none): another tool's
	// change between two of the stage's calls.
	hookAt int
	hook   func(call string)
}

// arm makes the run that follows crash at its at-th call.
func (c *crasher) arm(at int, after bool) { c.at, c.after, c.where = at, after, "" }

// disarm: no crash and no hook (the call count restarts).
func (c *crasher) disarm() { c.at, c.n, c.where, c.hookAt, c.hook = 0, 0, "", 0, nil }

// hookBefore makes the run that follows call hook before its at-th call.
func (c *crasher) hookBefore(at int, hook func(call string)) { c.hookAt, c.hook = at, hook }

// crashCall runs one dependency call, crashing before or after it when the
// crasher is armed for it.
func crashCall[T any](c *crasher, name string, f func() (T, error)) (T, error) {
	c.n++
	if c.hookAt > 0 && c.n == c.hookAt {
		h := c.hook
		c.hookAt, c.hook = 0, nil
		h(name)
	}
	hit := c.at > 0 && c.n == c.at
	if hit && !c.after {
		c.at, c.where = 0, "before "+name
		panic(crashPanic{where: c.where})
	}
	v, err := f()
	if hit {
		c.at, c.where = 0, "after "+name
		panic(crashPanic{where: c.where})
	}
	return v, err
}

func crashCall0(c *crasher, name string, f func() error) error {
	_, err := crashCall(c, name, func() (struct{}, error) { return struct{}{}, f() })
	return err
}

// crashJobs is the job store behind a crasher.
type crashJobs struct {
	*jobs.Store
	c *crasher
}

func (j crashJobs) Create(ctx context.Context, job jobs.Job, groups []jobs.Group) error {
	return crashCall0(j.c, "jobs.Create", func() error { return j.Store.Create(ctx, job, groups) })
}
func (j crashJobs) Get(ctx context.Context, id string) (jobs.Job, error) {
	return crashCall(j.c, "jobs.Get", func() (jobs.Job, error) { return j.Store.Get(ctx, id) })
}
func (j crashJobs) Group(ctx context.Context, id string, index int) (jobs.Group, error) {
	return crashCall(j.c, "jobs.Group", func() (jobs.Group, error) { return j.Store.Group(ctx, id, index) })
}
func (j crashJobs) Groups(ctx context.Context, id string) ([]jobs.Group, error) {
	return crashCall(j.c, "jobs.Groups", func() ([]jobs.Group, error) { return j.Store.Groups(ctx, id) })
}
func (j crashJobs) Transition(ctx context.Context, id string, from []jobs.State, to jobs.State, reason string) error {
	return crashCall0(j.c, "jobs.Transition", func() error { return j.Store.Transition(ctx, id, from, to, reason) })
}
func (j crashJobs) BeginCommit(ctx context.Context, id string, from []jobs.State, committer string) error {
	return crashCall0(j.c, "jobs.BeginCommit", func() error { return j.Store.BeginCommit(ctx, id, from, committer) })
}
func (j crashJobs) TakeOver(ctx context.Context, id, committer string, staleBefore time.Time) error {
	return crashCall0(j.c, "jobs.TakeOver", func() error { return j.Store.TakeOver(ctx, id, committer, staleBefore) })
}
func (j crashJobs) Heartbeat(ctx context.Context, id, committer string) error {
	return crashCall0(j.c, "jobs.Heartbeat", func() error { return j.Store.Heartbeat(ctx, id, committer) })
}
func (j crashJobs) EndCommitting(ctx context.Context, id, committer string, to jobs.State, reason string) error {
	return crashCall0(j.c, "jobs.EndCommitting", func() error { return j.Store.EndCommitting(ctx, id, committer, to, reason) })
}
func (j crashJobs) MarkCommitted(ctx context.Context, id string, snapshotID int64, reason string) error {
	return crashCall0(j.c, "jobs.MarkCommitted", func() error { return j.Store.MarkCommitted(ctx, id, snapshotID, reason) })
}
func (j crashJobs) BeginBatch(ctx context.Context, id string, batch int, committer string) error {
	return crashCall0(j.c, "jobs.BeginBatch", func() error { return j.Store.BeginBatch(ctx, id, batch, committer) })
}
func (j crashJobs) EndBatch(ctx context.Context, id, committer string, e jobs.BatchEnd) error {
	return crashCall0(j.c, "jobs.EndBatch", func() error { return j.Store.EndBatch(ctx, id, committer, e) })
}
func (j crashJobs) FailGroup(ctx context.Context, jobID string, group int, reason string) error {
	return crashCall0(j.c, "jobs.FailGroup", func() error { return j.Store.FailGroup(ctx, jobID, group, reason) })
}
func (j crashJobs) RegisterAttempt(ctx context.Context, jobID string, token int64, group int, attempt string) error {
	return crashCall0(j.c, "jobs.RegisterAttempt", func() error { return j.Store.RegisterAttempt(ctx, jobID, token, group, attempt) })
}
func (j crashJobs) Claim(ctx context.Context, jobID string, token int64, group int, attempt, descriptorKey string, rowsWritten int64) error {
	return crashCall0(j.c, "jobs.Claim", func() error {
		return j.Store.Claim(ctx, jobID, token, group, attempt, descriptorKey, rowsWritten)
	})
}

// crashLeases is a lease store behind a crasher.
type crashLeases struct {
	*lease.Store
	c *crasher
}

func (l crashLeases) Acquire(ctx context.Context, tbl, owner string, ttl time.Duration) (lease.Lease, error) {
	return crashCall(l.c, "leases.Acquire", func() (lease.Lease, error) { return l.Store.Acquire(ctx, tbl, owner, ttl) })
}
func (l crashLeases) Renew(ctx context.Context, le lease.Lease, ttl time.Duration) (lease.Lease, error) {
	return crashCall(l.c, "leases.Renew", func() (lease.Lease, error) { return l.Store.Renew(ctx, le, ttl) })
}
func (l crashLeases) Release(ctx context.Context, le lease.Lease) error {
	return crashCall0(l.c, "leases.Release", func() error { return l.Store.Release(ctx, le) })
}
func (l crashLeases) RecordFailure(ctx context.Context, tbl, class string) (lease.Backoff, error) {
	return crashCall(l.c, "leases.RecordFailure", func() (lease.Backoff, error) { return l.Store.RecordFailure(ctx, tbl, class) })
}
func (l crashLeases) RecordSuccess(ctx context.Context, tbl string) error {
	return crashCall0(l.c, "leases.RecordSuccess", func() error { return l.Store.RecordSuccess(ctx, tbl) })
}
func (l crashLeases) ForgetJobs(ctx context.Context, tbl string, jobIDs []string) error {
	return crashCall0(l.c, "leases.ForgetJobs", func() error { return l.Store.ForgetJobs(ctx, tbl, jobIDs) })
}

// crashBlobs is the bucket behind a crasher.
type crashBlobs struct {
	*blob.Store
	c *crasher
}

func (b crashBlobs) Get(ctx context.Context, key string) ([]byte, error) {
	return crashCall(b.c, "blobs.Get", func() ([]byte, error) { return b.Store.Get(ctx, key) })
}
func (b crashBlobs) Put(ctx context.Context, name string, data []byte) (string, error) {
	return crashCall(b.c, "blobs.Put", func() (string, error) { return b.Store.Put(ctx, name, data) })
}
func (b crashBlobs) Delete(ctx context.Context, key string) error {
	return crashCall0(b.c, "blobs.Delete", func() error { return b.Store.Delete(ctx, key) })
}
func (b crashBlobs) List(ctx context.Context, prefix string) ([]string, error) {
	return crashCall(b.c, "blobs.List", func() ([]string, error) { return b.Store.List(ctx, prefix) })
}

// crashQueue is a queue's sending side behind a crasher.
type crashQueue struct {
	q *queue.Queue
	c *crasher
}

func (q crashQueue) Send(ctx context.Context, body string) error {
	return crashCall0(q.c, "queue.Send", func() error { return q.q.Send(ctx, body) })
}
func (q crashQueue) SendAll(ctx context.Context, bodies []string) error {
	return crashCall0(q.c, "queue.SendAll", func() error { return q.q.SendAll(ctx, bodies) })
}

// hookCatalog is the committer's catalog: behind a crasher, and with
// beforeCommit run right before each catalog commit (after the committer
// loaded the table, decided and asserted what it saw).
type hookCatalog struct {
	catalog.Catalog
	c *crasher
	// beforeCommit, when set, runs once (it is cleared first).
	beforeCommit *func(ident table.Identifier)
}

func (h hookCatalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	return crashCall(h.c, "catalog.LoadTable", func() (*table.Table, error) { return h.Catalog.LoadTable(ctx, ident) })
}

func (h hookCatalog) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	type out struct {
		meta table.Metadata
		loc  string
	}
	o, err := crashCall(h.c, "catalog.CommitTable", func() (out, error) {
		if f := *h.beforeCommit; f != nil {
			*h.beforeCommit = nil
			f(ident)
		}
		m, loc, err := h.Catalog.CommitTable(ctx, ident, reqs, updates)
		return out{m, loc}, err
	})
	return o.meta, o.loc, err
}

// safetyStages are icekeeper's stages of one run, over crashing wrappers.
type safetyStages struct {
	crash *crasher
	// beforeCommit: see hookCatalog.
	beforeCommit func(ident table.Identifier)
	planner      *plan.Planner
	// takeoverPlanner's lease store runs leaseShift ahead of the clock.
	takeoverPlanner *plan.Planner
	leaseShift      time.Duration
	rewriter        localrun.BatchHandler
	// rewriterErr is the last error the rewriter's handler logged.
	rewriterErr string
	committer   *commit.Committer
	// lateCommitter runs past the commit takeover window.
	lateCommitter *commit.Committer
}

// newSafetyStages builds the stages as the wiring packages do (the
// committer without the maintenance log's recorder and the compaction
// continuation, which decide nothing about files). taskCatalog gives the
// deletion and listing tasks the catalog, as the rewriter function's
// wiring does (shared/stage/rewriter: Deleter, Lister); the seeds kept
// before the S3 tables run without it, as the harness had them (their
// orphan cleanups' deletion tasks then fail and the committer deletes
// their parts, and a listing whose metadata file is gone fails), so that
// their histories stay the same.
func newSafetyStages(e *env, taskCatalog bool) *safetyStages {
	s := &safetyStages{crash: &crasher{}}
	cfg := e.cfg
	c := s.crash
	js := crashJobs{Store: e.deps.Jobs, c: c}
	ls := crashLeases{Store: e.deps.Leases, c: c}
	bs := crashBlobs{Store: e.deps.Blobs, c: c}
	tasks := crashQueue{q: e.deps.Tasks, c: c}
	commits := crashQueue{q: e.deps.Commits, c: c}
	ps := plan.Settings{LeaseTTL: cfg.LeaseTTL, MaxGroupBytes: cfg.MaxGroupBytes, InlineTaskBytes: cfg.InlineTaskBytes,
		TargetFileSize: cfg.TargetFileSize, OrphanListFanOutFiles: cfg.OrphanListFanOutFiles, MaxJobFiles: cfg.MaxJobFiles}
	var err error
	if s.planner, err = plan.New(ps, e.cat, ls, js, bs, tasks, commits, discardLog, nil, plan.Options{}); err != nil {
		e.t.Fatal(err)
	}
	shifted, err := lease.NewStore(cloud.Clients.DynamoDB, cfg.LeaseTable, func() time.Time { return time.Now().Add(s.leaseShift) })
	if err != nil {
		e.t.Fatal(err)
	}
	if s.takeoverPlanner, err = plan.New(ps, e.cat, crashLeases{Store: shifted, c: c}, js, bs, tasks, commits, discardLog, nil, plan.Options{}); err != nil {
		e.t.Fatal(err)
	}
	rw, err := rewrite.New(rewrite.Settings{MaxAttempts: cfg.MaxTaskAttempts, ScanConcurrency: cfg.ScanConcurrency, LeaseTTL: cfg.LeaseTTL,
		SortWindowBytes: cfg.SortWindowBytes, ExchangePageBytes: cfg.ExchangePageBytes}, js, ls, bs, commits, e.deps.Tables, discardLog, nil, rewrite.Options{})
	if err != nil {
		e.t.Fatal(err)
	}
	cat := hookCatalog{Catalog: e.cat, c: c, beforeCommit: &s.beforeCommit}
	deleter := deletions.Deleter{Blobs: bs, Leases: ls, Tables: e.deps.Tables, Commits: commits, LeaseTTL: cfg.LeaseTTL, Log: discardLog}
	lister := listing.Lister{Blobs: bs, Leases: ls, Tables: e.deps.Tables, Commits: commits, LeaseTTL: cfg.LeaseTTL, Log: discardLog}
	if taskCatalog {
		deleter.Catalog, lister.Catalog = cat, cat
	}
	s.rewriter = rewriterstage.Handler{Rewrite: rw, Delete: failedDeletion{Deleter: deleter, msg: &s.rewriterErr},
		List: failedListing{Lister: lister, msg: &s.rewriterErr},
		Log:  slog.New(lastError{msg: &s.rewriterErr})}.Handle
	// Deletions of more than one part go to the rewriters, as wired.
	newCommitter := func(now func() time.Time) *commit.Committer {
		cm, err := commit.New(commit.Settings{LeaseTTL: cfg.LeaseTTL, MaxRetries: cfg.CommitRetries, CommitTakeover: cfg.CommitTakeover,
			MaxAttempts: cfg.MaxTaskAttempts, NoRebase: !cfg.RebaseDeletes}, cat, js, ls, bs, e.deps.Tables, discardLog, now, commit.Options{DeletionTasks: tasks, DeletionFanOutParts: 2})
		if err != nil {
			e.t.Fatal(err)
		}
		return cm
	}
	s.committer = newCommitter(nil)
	late := cfg.CommitTakeover + time.Second
	s.lateCommitter = newCommitter(func() time.Time { return time.Now().Add(late) })
	return s
}

// failedDeletion and failedListing are a deletion and a listing task's
// runners that keep the error a delivery failed with, for the history
// (the stage logs none).
type failedDeletion struct {
	deletions.Deleter
	msg *string
}

func (f failedDeletion) Handle(ctx context.Context, task messages.Task) (deletions.Result, error) {
	res, err := f.Deleter.Handle(ctx, task)
	if err != nil {
		*f.msg = "deletion failed: " + err.Error()
	}
	return res, err
}

type failedListing struct {
	listing.Lister
	msg *string
}

func (f failedListing) Handle(ctx context.Context, task messages.Task) (listing.Result, error) {
	res, err := f.Lister.Handle(ctx, task)
	if err != nil {
		*f.msg = "listing failed: " + err.Error()
	}
	return res, err
}

// lastError is a log handler that keeps the last error logged (with its
// err attribute), for the history.
type lastError struct{ msg *string }

func (h lastError) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelError }
func (h lastError) Handle(_ context.Context, r slog.Record) error {
	s := r.Message
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "err" {
			s += ": " + a.Value.String()
		}
		return true
	})
	*h.msg = s
	return nil
}
func (h lastError) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h lastError) WithGroup(string) slog.Handler      { return h }

// outcomeCommitter is a committer that keeps what its last request did,
// for the history.
type outcomeCommitter struct {
	c    *commit.Committer
	last *string
}

func (o outcomeCommitter) Handle(ctx context.Context, req messages.CommitRequest, receiveCount int) (commit.Result, error) {
	res, err := o.c.Handle(ctx, req, receiveCount)
	if err != nil {
		*o.last = "error: " + err.Error()
	} else {
		*o.last = fmt.Sprintf("%s %s", res.Outcome, res.Reason)
	}
	return res, err
}

// committerHandlerOf is the committer function's handler over c; last
// receives what the request did.
func committerHandlerOf(c *commit.Committer, last *string) localrun.BatchHandler {
	return committerstage.Handler{Commit: outcomeCommitter{c: c, last: last}, Log: discardLog}.Handle
}

// delivery is what one delivery of one message did.
type delivery struct {
	// body is the message delivered ("" when the queue was empty), and
	// receiveCount its delivery count (1: its first).
	body         string
	receiveCount int
	// crashed names the call the stage crashed at ("" when it did not);
	// failed: the message was not acknowledged (a crash, an error, or an
	// acknowledgement lost on purpose), so it will be delivered again.
	crashed string
	failed  bool
}

// deliverOne receives at most one message from q and hands it to the
// handler pick chooses for it (by its body and delivery count); loseAck
// reports the message failed even when it succeeded (its acknowledgement
// lost: delivered again). pick may arm the crasher.
func (s *safetyStages) deliverOne(ctx context.Context, q *queue.Queue, pick func(body string, receiveCount int) (h localrun.BatchHandler, loseAck bool)) (delivery, error) {
	var d delivery
	wrapped := func(ctx context.Context, ev lambdaevents.SQSEvent) (resp lambdaevents.SQSEventResponse, err error) {
		if len(ev.Records) != 1 {
			return resp, fmt.Errorf("a batch of %d messages, want 1", len(ev.Records))
		}
		rec := ev.Records[0]
		d.body, d.receiveCount = rec.Body, stage.ReceiveCount(rec)
		h, loseAck := pick(d.body, d.receiveCount)
		defer func() {
			if p := recover(); p != nil {
				cp, ok := p.(crashPanic)
				if !ok {
					panic(p)
				}
				d.crashed = cp.where
				resp, err = lambdaevents.SQSEventResponse{}, fmt.Errorf("simulated crash %s", cp.where)
			}
		}()
		resp, err = h(ctx, ev)
		if err == nil && len(resp.BatchItemFailures) == 0 && loseAck {
			resp.BatchItemFailures = append(resp.BatchItemFailures, lambdaevents.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
		}
		return resp, err
	}
	st, err := localrun.Drain(ctx, q, wrapped, 1, 1)
	d.failed = st.Failed > 0
	return d, err
}

// runPlanner runs one planning with the crasher as armed; crashed names
// the call it crashed at.
func (s *safetyStages) runPlanner(f func() (plan.Result, error)) (res plan.Result, crashed string, err error) {
	defer func() {
		if p := recover(); p != nil {
			cp, ok := p.(crashPanic)
			if !ok {
				panic(p)
			}
			crashed, err = cp.where, nil
		}
	}()
	res, err = f()
	return res, "", err
}
