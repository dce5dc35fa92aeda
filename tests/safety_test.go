package tests

// Safety harness: randomized histories of tables that icekeeper maintains
// while other tools use the same storage, checked after every step
// against an independent model of what must stay on storage and what
// every ref must read.
//
// A seed (math/rand/v2, PCG) draws the tables and a history. The tables:
// t, and as the seed says t2 (a neighbour whose location begins with t's)
// and nested (a table located inside t's data/ folder), each format v2 or
// v3, partitioned or not, some with gzip metadata, old metadata files
// deleted after each commit with a small previous-versions-max, the
// object-storage layout, or a write.data.path outside the location
// (safety_ops_test.go); and, but for the seeds kept before them, s3 on the
// emulator's S3 and as the seed says s3_nested, located s3a:// or s3n://
// inside s3's data/ (safety_s3_test.go). The history interleaves, one
// step at a time:
//
//   - other tools (safety_ops_test.go): writers appending, deleting
//     (position deletes, deletion vectors, equality deletes) and
//     overwriting on main or on a branch; tags and branches created,
//     moved and dropped; main rolled back or pointed at a branch; a
//     branch's append cherry-picked onto main (both snapshots then share
//     its files; laterOps, not drawn by the seeds kept before it); the
//     catalog pointed back at an older metadata file (an undo; undoOps,
//     not drawn by the seeds kept before it); a Hadoop S3A or S3N writer
//     recording its data and delete files in an S3 table as s3a:// or
//     s3n:// names of the same objects (s3Ops, with the S3 tables);
//     iceberg-go's own expiry; property changes; stray files planted;
//     time passing (files age past the orphan safety age);
//   - icekeeper (safety_stages_test.go): planning a compaction (whose
//     planning cleans up earlier jobs' files), a delete-file rewrite, a
//     manifest rewrite, a snapshot expiry or an orphan cleanup on a table;
//     one delivery of a rewriter task (rewrites, deletion and listing
//     tasks) or of a commit request; each delivery may crash at any of its
//     store, queue or catalog calls, lose its acknowledgement (delivered
//     again), be a late committer past the takeover window, or meet
//     another tool's change right before its catalog commit (the
//     before-commit hook); a planner may crash likewise, or arrive after
//     the lease TTL and take the table over from the job in flight; old
//     task and commit messages are delivered again.
//
// After every step the model (safety_model_test.go) checks that every file
// still needed by any table, any ref, any snapshot in the current metadata
// or in a metadata file of the log, or any icekeeper job in flight is on
// storage; after every icekeeper step, that no ref icekeeper did not decide
// to drop is gone or moved, that main reads the rows it read, and that
// every snapshot it removed was planned and unprotected. Other tools'
// steps set what is expected. At the end the other tools stop, the
// queues are drained (a late committer takes silent jobs over, a late
// planner supersedes jobs left behind), and every job must have ended.
//
// `go test ./tests -run TestSafety` runs a fixed set of seeds (skipped
// with -short); ICEKEEPER_FUZZ_SEEDS=N runs N random seeds and
// ICEKEEPER_FUZZ_SEED=S replays one (make fuzz-pipeline SEEDS=N). A
// failing seed prints the command that replays it and the history up to
// the step that failed (the run stops there); ICEKEEPER_SAFETY_HISTORY=1
// prints every seed's history.

import (
	"context"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	lambdaevents "github.com/aws/aws-lambda-go/events"

	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/harness/localrun"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/plan"
)

// safetyTakeover is the committer's takeover window: long enough that a
// before-commit hook (another tool's commit plus a model check) stays well
// within the commit deadline (half of it); nothing waits it out, as the
// late committer's clock is moved past it instead.
const safetyTakeover = 20 * time.Second

// safetyFixedSeeds run on every `go test ./tests`: four histories that
// run to the end and together exercise every interleaving
// (safetyCoverage), and one seed for each kind of failure the harness has
// found, kept as regressions (each failed before its fix: the expiry's
// guard and its check after the commit, shared/expire; orphan cleanup's
// refusals, shared/orphans; leftovers, shared/commit/leftovers.go; a ref
// that stays keeps its snapshot, onlyPlanned):
//
//   - 52510948969811: a tag created right before an expiry's catalog
//     commit (after its committer loaded the table) is dropped by the
//     commit, and its snapshot's files deleted (the commit does not assert
//     that no new ref appeared; RemoveSnapshots, applied to the catalog's
//     current metadata, drops every ref whose snapshot it removes);
//   - 198782222804031: the same, the tag created between the committer's
//     load and its commit (a hook between two of its calls);
//   - 214085201791066: the same cause, a branch created there keeps its
//     head but loses the parent its retention keeps;
//   - 232442199384753: a tag that passed its max-ref-age after the expiry
//     was planned is dropped though the plan did not select it (the
//     committer keeps only planned ref removals, yet lets the tag's
//     snapshot expire, and the ref goes with it);
//   - 220483204527694: an orphan cleanup of t deletes the files of the
//     table nested in t's data/, whose metadata is gzip (.gz.metadata.json
//     is not read as another table's metadata);
//   - 141606846059874: the same with plain metadata that is young (old
//     metadata files deleted after commit, so none is old enough to be an
//     orphan that reveals the other table);
//   - 183117949677314: an expiry whose lease was taken over after its
//     catalog commit never ends (every delivery fails renewing the lease
//     before deleting).
var safetyFixedSeeds = slices.Concat(safetyFixedSeedsBefore, safetyFixedSeedsLater, safetyFixedSeedsUndo, safetyFixedSeedsS3)

// safetyFixedSeedsBefore are the fixed seeds kept before laterOps: they
// draw from otherOps alone, so each replays the history it was kept for.
var safetyFixedSeedsBefore = []uint64{
	182158865711844, 93882752998892, 144305242477186, 22031874524318,
	52510948969811, 198782222804031, 214085201791066, 232442199384753, 220483204527694, 141606846059874, 183117949677314,
}

// safetyFixedSeedsLater draw from laterOps too (a cherry-pick onto main
// of a branch's append, whose files both snapshots then share).
var safetyFixedSeedsLater = []uint64{152191846295384}

// safetyFixedSeedsUndo draw from undoOps too: 232053046340670 points the
// catalog back at an older metadata file while an expiry is in flight.
var safetyFixedSeedsUndo = []uint64{232053046340670}

// safetyFixedSeedsS3 have tables on the emulator's S3 and draw from s3Ops
// too (safety_s3_test.go): in 227940440969438 s3a and s3n writers record
// data and delete files of the S3 table, and orphan cleanups of it commit
// while files it references under those names are old (its listing names
// them s3://), as do expiries; in 50846932262822 a table located s3a:// or s3n://
// inside the S3 table's data/ refuses the cleanups of both, while
// compactions, delete-file and manifest rewrites of the S3 table commit
// over s3a or s3n names.
var safetyFixedSeedsS3 = []uint64{227940440969438, 50846932262822}

// keptBeforeS3 says whether a seed was kept before the S3 tables: its
// history has none (it would change otherwise).
func keptBeforeS3(seed uint64) bool {
	return slices.Contains(safetyFixedSeedsBefore, seed) || slices.Contains(safetyFixedSeedsLater, seed) || slices.Contains(safetyFixedSeedsUndo, seed)
}

// safetySeeds: ICEKEEPER_FUZZ_SEED (one), ICEKEEPER_FUZZ_SEEDS (that many
// random ones), else the fixed set (see diffSeeds).
func safetySeeds(t *testing.T) []uint64 {
	if os.Getenv("ICEKEEPER_FUZZ_SEED") == "" && os.Getenv("ICEKEEPER_FUZZ_SEEDS") == "" {
		return safetyFixedSeeds
	}
	return diffSeeds(t)
}

// TestSafety_NothingNeededIsEverDeleted runs one randomized history per
// seed and checks, after every step, that no file any table, ref,
// snapshot or job in flight needs is gone, that icekeeper drops or moves
// no ref it did not decide to, changes no ref's rows and removes no
// protected snapshot, and, at the end, that every job ended.
func TestSafety_NothingNeededIsEverDeleted(t *testing.T) {
	if testing.Short() {
		t.Skip("the safety harness runs without -short")
	}
	total := map[string]int{}
	for _, seed := range safetySeeds(t) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			r := &safetyRun{t: t, seed: seed, failures: map[string][]string{}, stats: map[string]int{}, counted: map[string]bool{}}
			start := time.Now()
			r.run()
			r.report(time.Since(start))
			for k, v := range r.stats {
				total[k] += v
			}
		})
	}
	t.Logf("interleavings exercised, all seeds: %v", total)
	if os.Getenv("ICEKEEPER_FUZZ_SEED") != "" || os.Getenv("ICEKEEPER_FUZZ_SEEDS") != "" {
		return
	}
	// The fixed seeds must exercise every kind of interleaving.
	for _, k := range safetyCoverage {
		if total[k] == 0 {
			t.Errorf("no fixed seed exercised %q: the harness no longer covers it", k)
		}
	}
}

// safetyCoverage are the interleavings the fixed seeds must exercise
// (counted in safetyRun.stats).
var safetyCoverage = []string{
	"committed compaction", "committed rewrite-deletes", "committed rewrite-manifests", "committed expire", "committed remove-orphans",
	"before-commit hook", "mid-step hook", "committer crash", "rewriter crash", "planner crash", "lease takeover", "late committer",
	"lost ack", "duplicate message", "operator cycle", "nested table", "neighbour table", "gzip metadata", "metadata deleted after commit",
	"iceberg-go expiry", "tag or branch created", "rollback", "cherry-pick", "undo", "undo during an expiry",
	"s3 table", "s3a or s3n table nested in an s3 table", "s3a or s3n writer",
	"committed remove-orphans over s3a or s3n names", "committed expire over s3a or s3n names", "committed compaction over s3a or s3n names",
}

// safetyRun is one seed's run.
type safetyRun struct {
	t    *testing.T
	seed uint64
	rng  *mathrand.Rand
	// otherOps are the other tools' changes this seed draws from
	// (otherOps, and laterOps unless it is one of safetyFixedSeedsBefore).
	otherOps []otherOp
	e        *env
	s        *safetyStages
	model    *safetyModel
	tables   []*sTable
	nextID   int64
	// refSeq and plantSeq number new refs and planted files.
	refSeq, plantSeq int
	history          []string
	step             int
	// failures by category; stopped: a step failed, the run ends there.
	failures map[string][]string
	stopped  bool
	// bodies are messages delivered, for late duplicates.
	taskBodies, commitBodies []string
	// stats count the interleavings exercised; counted, the jobs counted.
	stats   map[string]int
	counted map[string]bool
	// hooked: a hook ran in the current delivery.
	hooked bool
	// takeoverNext: the next step is a planner after the lease TTL on
	// this table (its job's committer crashed).
	takeoverNext string
	// s3 is the run's bucket on the emulator's S3 (nil: a seed kept
	// before the S3 tables).
	s3 *safetyS3
}

func (r *safetyRun) note(format string, args ...any) {
	r.history = append(r.history, fmt.Sprintf(format, args...))
}

// fail records a failure of the current step; the run stops after it.
func (r *safetyRun) fail(cat, format string, args ...any) {
	msg := fmt.Sprintf("step %d: ", r.step) + fmt.Sprintf(format, args...)
	r.failures[cat] = append(r.failures[cat], msg)
	r.note("!!! %s: %s", cat, msg)
	r.stopped = true
}

func (r *safetyRun) run() {
	r.rng = mathrand.New(mathrand.NewPCG(r.seed, r.seed^0x5afe7b0b5afe7b0b))
	r.otherOps = otherOps
	if !slices.Contains(safetyFixedSeedsBefore, r.seed) {
		r.otherOps = append(slices.Clone(otherOps), laterOps...)
		if !slices.Contains(safetyFixedSeedsLater, r.seed) {
			r.otherOps = append(r.otherOps, undoOps...)
		}
	}
	if !keptBeforeS3(r.seed) {
		r.otherOps = append(r.otherOps, s3Ops...)
		r.s3 = newSafetyS3(r.t, r.seed)
	}
	fanOut := r.rng.IntN(3) == 0
	r.e = setup(r.t, func(c *config.Config) {
		c.CommitTakeover = safetyTakeover
		if fanOut {
			c.OrphanListFanOutFiles = 1 // orphan listings fan out to the rewriters
		}
		if r.s3 != nil {
			c.Catalog.Properties = r.s3.catalogProperties()
		}
	})
	r.s = newSafetyStages(r.e, r.s3 != nil)
	r.model = newSafetyModel(r)
	if fanOut {
		r.note("orphan listings fan out to the rewriters")
	}
	r.createTables()
	for _, st := range r.tables {
		r.model.addTable(st)
		switch st.role {
		case "nested":
			r.stats["nested table"]++
		case "neighbour":
			r.stats["neighbour table"]++
		case "s3":
			r.stats["s3 table"]++
		case "nested in s3":
			r.stats["s3a or s3n table nested in an s3 table"]++
		}
		props := r.load(st).Properties()
		if props[table.MetadataCompressionKey] == "gzip" {
			r.stats["gzip metadata"]++
		}
		if props[table.MetadataDeleteAfterCommitEnabledKey] == "true" {
			r.stats["metadata deleted after commit"]++
		}
	}
	r.model.check(actorOther, "creation")
	// Each table starts with a few small files; on S3, every other one
	// written through S3A or S3N.
	for _, st := range r.tables {
		for i := range 4 + r.rng.IntN(3) {
			o := otherOps[0]
			if i%2 == 1 && r.s3 != nil && st.onS3(r) {
				o = s3Ops[0]
			}
			r.other(st, o, "")
		}
	}
	steps := 200 + r.rng.IntN(80)
	for r.step = 1; r.step <= steps && !r.stopped; r.step++ {
		r.oneStep()
	}
	if !r.stopped {
		r.settle()
	}
}

// oneStep draws and runs one step of the history.
func (r *safetyRun) oneStep() {
	if st := r.tableNamed(r.takeoverNext); st != nil {
		// A committer crashed: its request comes back after the commit
		// queue's visibility timeout, which is about the lease TTL, so a
		// planner may well visit the table first and take it over.
		r.takeoverNext = ""
		r.planOn(st, r.pickKind(), true, false)
		return
	}
	n := r.rng.IntN(100)
	switch {
	case n < 36:
		st := r.tables[r.rng.IntN(len(r.tables))]
		r.other(st, r.pickOp(r.otherOps), "")
	case n < 50:
		r.planStep(false)
	case n < 70:
		if !r.taskStep(true) && !r.commitStep(true) {
			r.other(r.tables[r.rng.IntN(len(r.tables))], r.pickOp(r.otherOps), "")
		}
	case n < 93:
		if !r.commitStep(true) && !r.taskStep(true) {
			r.other(r.tables[r.rng.IntN(len(r.tables))], r.pickOp(r.otherOps), "")
		}
	case n < 96:
		r.planStep(true)
	case n < 98:
		r.operatorCycle()
	default:
		r.duplicateStep()
	}
}

// operatorCycle is an operator's `icekeeper compact` on a table (package
// localrun's cycle, as tests/interrupt_test.go runs it), interrupted
// (Ctrl-C) while a group is being rewritten: the cycle ends its job and
// removes what it wrote. Its drains deliver whatever the queues hold.
func (r *safetyRun) operatorCycle() {
	st := r.tables[r.rng.IntN(len(r.tables))]
	stages, _, err := r.e.deps.LocalStages(r.e.cat)
	if err != nil {
		r.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(r.e.ctx)
	defer cancel()
	at, calls := 1+r.rng.IntN(2), 0
	inner := stages.Rewriter
	stages.Rewriter = func(hctx context.Context, ev lambdaevents.SQSEvent) (lambdaevents.SQSEventResponse, error) {
		if calls++; calls == at {
			cancel() // Ctrl-C while this group is being rewritten
		}
		return inner(hctx, ev)
	}
	run, kind := localrun.RunCycle, jobs.KindCompaction
	if r.rng.IntN(3) == 0 {
		run, kind = localrun.RunDeleteRewrite, jobs.KindRewriteDeletes
	}
	c, err := run(ctx, stages, st.name, "operator")
	r.model.track(c.Plan.JobID)
	state := ""
	if c.Job != nil {
		state = fmt.Sprintf("; job %s %s", c.Job.State, firstLine(c.Job.Reason))
	}
	r.stats["operator cycle"]++
	r.note("%d operator's %s cycle on %s, Ctrl-C at rewriter call %d: %s %s, %d rewriter and %d committer deliveries, err %v%s",
		r.step, kind, st.name, at, c.Plan.Outcome, c.Plan.JobID, c.Rewrites.Delivered, c.Commits.Delivered, err, state)
	r.model.check(actorIcekeeper, fmt.Sprintf("the operator's %s cycle on %s", kind, st.name))
	r.countEnded()
}

// other runs another tool's operation on a table and brings the model up
// to date.
func (r *safetyRun) other(st *sTable, o otherOp, phase string) {
	desc, err := o.run(r, st)
	switch {
	case errors.Is(err, errSkip):
		r.note("%d %s(%s on %s: skipped, nothing to act on)", r.step, phase, o.name, st.name)
		return
	case err != nil:
		r.note("%d %s%s on %s: failed (%s)", r.step, phase, o.name, st.name, firstLine(err.Error()))
		r.stats["other tool failed"]++
		desc = o.name + " (failed)"
	default:
		r.note("%d %s%s", r.step, phase, desc)
		switch o.name {
		case "iceberg-go expiry":
			r.stats["iceberg-go expiry"]++
		case "create tag", "create branch":
			r.stats["tag or branch created"]++
		case "rollback main", "main to a branch head":
			r.stats["rollback"]++
		case "cherry-pick a branch's append":
			r.stats["cherry-pick"]++
		case "s3a or s3n writer":
			r.stats["s3a or s3n writer"]++
		case "undo: the catalog back at an older metadata file":
			r.stats["undo"]++
			for _, jm := range r.model.inFlight() {
				if jm.kind == jobs.KindExpire && jm.table == st.name {
					r.stats["undo during an expiry"]++
				}
			}
		}
	}
	r.model.check(actorOther, desc)
}

// jobKinds are the jobs icekeeper's planner is asked for, by weight.
var jobKinds = []struct {
	kind   jobs.Kind
	weight int
}{{jobs.KindCompaction, 30}, {jobs.KindRewriteDeletes, 15}, {jobs.KindRewriteManifests, 12}, {jobs.KindExpire, 28}, {jobs.KindRemoveOrphans, 15}}

func (r *safetyRun) pickKind() jobs.Kind {
	n := r.rng.IntN(100)
	for _, k := range jobKinds {
		if n < k.weight {
			return k.kind
		}
		n -= k.weight
	}
	return jobs.KindCompaction
}

// planStep asks a planner for a job on a table: the ordinary one, or
// (takeover) one arriving after the lease TTL, which supersedes a job in
// flight. One planning in ten crashes at one of its calls.
func (r *safetyRun) planStep(takeover bool) {
	st := r.tables[r.rng.IntN(len(r.tables))]
	if takeover {
		// Prefer a table with a job in flight.
		if fl := r.model.inFlight(); len(fl) > 0 {
			if t := r.tableNamed(fl[r.rng.IntN(len(fl))].table); t != nil {
				st = t
			}
		}
	}
	kind := r.pickKind()
	if r.s3 != nil && r.rng.IntN(2) == 0 && st.onS3(r) {
		// The S3 tables are there for their orphan cleanups over s3a
		// and s3n names: one planning of theirs in two is one.
		kind = jobs.KindRemoveOrphans
	}
	r.planOn(st, kind, takeover, r.rng.IntN(10) == 0)
}

// planOn plans a job of a kind on a table.
func (r *safetyRun) planOn(st *sTable, kind jobs.Kind, takeover, crash bool) {
	ctx := r.e.ctx
	p, who := r.s.planner, "planner"
	if takeover {
		r.s.leaseShift += r.e.cfg.LeaseTTL + time.Minute
		p, who = r.s.takeoverPlanner, "planner after the lease TTL"
	}
	if crash {
		r.s.crash.arm(1+r.rng.IntN(10), r.rng.IntN(2) == 0)
	}
	mark := len(r.history)
	r.hooked = false
	if !crash && r.rng.IntN(6) == 0 {
		r.s.crash.hookBefore(1+r.rng.IntN(6), r.midHook("planner", st.name))
	}
	res, crashed, err := r.s.runPlanner(func() (plan.Result, error) {
		switch kind {
		case jobs.KindRewriteDeletes:
			return p.PlanDeleteRewrite(ctx, st.name, "safety")
		case jobs.KindRewriteManifests:
			return p.PlanManifestRewrite(ctx, st.name, "safety")
		case jobs.KindExpire:
			return p.PlanExpiry(ctx, st.name, "safety")
		case jobs.KindRemoveOrphans:
			return p.PlanOrphanCleanup(ctx, st.name, "safety", 0)
		}
		return p.PlanTable(ctx, st.name, "safety")
	})
	r.s.crash.disarm()
	if r.hooked {
		r.stats["mid-step hook"]++
	}
	var line string
	switch {
	case crashed != "":
		r.stats["planner crash"]++
		owner := r.model.leaseOwner(ctx, st)
		r.model.track(owner)
		line = fmt.Sprintf("%d %s: %s on %s crashed %s (lease owner %s)", r.step, who, kind, st.name, crashed, or(owner, "none"))
	case err != nil:
		line = fmt.Sprintf("%d %s: %s on %s failed: %s", r.step, who, kind, st.name, firstLine(err.Error()))
	case res.Outcome == plan.OutcomePlanned:
		r.model.track(res.JobID)
		if takeover {
			r.stats["lease takeover"]++
		}
		line = fmt.Sprintf("%d %s: %s job %s on %s planned at snapshot %d (%d groups) %s", r.step, who, kind, res.JobID, st.name, res.SnapshotID, res.Groups, res.Reason)
	default:
		if takeover && res.Outcome != plan.OutcomeLeaseHeld {
			r.stats["lease takeover"]++
		}
		line = fmt.Sprintf("%d %s: %s on %s: %s %s", r.step, who, kind, st.name, res.Outcome, res.Reason)
	}
	// The planning's line goes before what its hook did.
	r.history = append(r.history[:mark], append([]string{line}, r.history[mark:]...)...)
	r.model.check(actorIcekeeper, fmt.Sprintf("planning %s on %s", kind, st.name))
}

// describeMessage says which job and what a delivered message was for.
func (r *safetyRun) describeMessage(body string, commitQueue bool) string {
	if commitQueue {
		var req messages.CommitRequest
		if err := messages.Decode([]byte(body), &req); err != nil {
			return "a commit request"
		}
		what := "commit request"
		switch {
		case req.Abort:
			what = "abort request"
		case req.DeletionsDone:
			what = "deletions-done request"
		case req.ListingDone:
			what = "listing-done request"
		case req.Batch > 0:
			what = fmt.Sprintf("commit request of batch %d", req.Batch)
		}
		return fmt.Sprintf("%s for job %s", what, req.JobID)
	}
	var task messages.Task
	if err := messages.Decode([]byte(body), &task); err != nil {
		return "a task"
	}
	what := fmt.Sprintf("rewrite task of group %d", task.Group)
	switch {
	case task.Delete != nil:
		what = "deletion task"
	case task.List != nil:
		what = "listing task"
	}
	return fmt.Sprintf("%s of job %s (%s)", what, task.JobID, task.Table)
}

// jobState says where the job a message is for stands now.
func (r *safetyRun) jobState(body string) string {
	var head struct {
		JobID string `json:"job_id"`
	}
	if err := messages.Decode([]byte(body), &head); err != nil || head.JobID == "" {
		return ""
	}
	r.model.track(head.JobID)
	j, err := r.e.deps.Jobs.Get(r.e.ctx, head.JobID)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("; %s job now %s", j.Kind, j.State)
}

// taskStep delivers one rewriter task, whose first delivery may crash at
// one of its calls or lose its acknowledgement (a redelivery runs clean,
// so a crash never uses up a message's deliveries by itself); false when
// the queue was empty.
func (r *safetyRun) taskStep(faults bool) bool {
	loseAck, crash, hook := false, false, false
	if faults {
		switch n := r.rng.IntN(100); {
		case n < 15:
			loseAck = true
		case n < 40:
			crash = true
		}
		hook = r.rng.IntN(4) == 0
	}
	at, after, hookAt := 1+r.rng.IntN(8), r.rng.IntN(2) == 0, 1+r.rng.IntN(8)
	mark := len(r.history)
	r.hooked = false
	d, err := r.s.deliverOne(r.e.ctx, r.e.deps.Tasks, func(body string, receiveCount int) (localrun.BatchHandler, bool) {
		if crash && receiveCount == 1 {
			r.s.crash.arm(at, after)
		}
		if hook && receiveCount == 1 {
			r.s.crash.hookBefore(hookAt, r.midHook("rewriter", r.tableOf(body)))
		}
		return r.s.rewriter, loseAck && receiveCount == 1
	})
	r.s.crash.disarm()
	if err != nil {
		r.t.Fatalf("deliver a task: %v", err)
	}
	logged := r.s.rewriterErr
	r.s.rewriterErr = ""
	if d.body == "" {
		return false
	}
	r.taskBodies = append(r.taskBodies, d.body)
	how := ""
	switch {
	case d.crashed != "":
		how = ", crashed " + d.crashed
		r.stats["rewriter crash"]++
	case loseAck && d.receiveCount == 1:
		how = ", acknowledgement lost"
		r.stats["lost ack"]++
	}
	if d.crashed == "" && logged != "" {
		how += " -> " + firstLine(logged)
	}
	if r.hooked {
		r.stats["mid-step hook"]++
	}
	line := fmt.Sprintf("%d rewriter: %s (delivery %d)%s%s", r.step, r.describeMessage(d.body, false), d.receiveCount, how, r.jobState(d.body))
	r.history = append(r.history[:mark], append([]string{line}, r.history[mark:]...)...)
	r.model.check(actorIcekeeper, "the rewriter's "+r.describeMessage(d.body, false))
	return true
}

// commitStep delivers one commit request. Its first delivery goes to the
// committer, or one time in four to a late one (past the takeover
// window), and may crash at one of its calls, lose its acknowledgement, or
// meet another tool's change right before its catalog commit (the
// before-commit hook). A redelivery, and any request for a job that lost
// its lease, goes to a late committer and runs clean: in the stack the
// commit queue's visibility timeout spans more than the takeover window,
// and the lease TTL more than both (infra: CommitVisibility, LeaseTTL), so
// a redelivered request, or a superseded job's, always finds its silent
// committer past the window. False when the queue was empty.
func (r *safetyRun) commitStep(faults bool) bool {
	late, crash, hook, loseAck := !faults, false, false, false
	if faults {
		late = r.rng.IntN(4) == 0
		crash = r.rng.IntN(4) == 0
		hook = r.rng.IntN(5) < 2
		loseAck = r.rng.IntN(10) == 0
	}
	at, after := 1+r.rng.IntN(24), r.rng.IntN(2) == 0
	midHook, hookAt := r.rng.IntN(2) == 0, 1+r.rng.IntN(24)
	mark := len(r.history)
	r.hooked = false
	var first, usedLate bool
	outcome := ""
	d, err := r.s.deliverOne(r.e.ctx, r.e.deps.Commits, func(body string, receiveCount int) (localrun.BatchHandler, bool) {
		first = receiveCount == 1
		usedLate = late || !first || r.leaseLost(body)
		c := r.s.committer
		if usedLate {
			c = r.s.lateCommitter
		}
		if first && crash {
			r.s.crash.arm(at, after)
		}
		if first && hook {
			if midHook {
				r.s.crash.hookBefore(hookAt, r.midHook("committer", r.tableOf(body)))
			} else {
				r.s.beforeCommit = r.hook
			}
		}
		return committerHandlerOf(c, &outcome), first && loseAck
	})
	r.s.beforeCommit = nil
	r.s.crash.disarm()
	if err != nil {
		r.t.Fatalf("deliver a commit request: %v", err)
	}
	if d.body == "" {
		return false
	}
	r.commitBodies = append(r.commitBodies, d.body)
	how := ""
	if usedLate {
		how += ", late committer"
		r.stats["late committer"]++
	}
	switch {
	case d.crashed != "":
		how += ", crashed " + d.crashed
		r.stats["committer crash"]++
		if r.rng.IntN(3) == 0 {
			r.takeoverNext = r.tableOf(d.body)
		}
	case first && loseAck:
		how += ", acknowledgement lost"
		r.stats["lost ack"]++
	}
	if r.hooked {
		r.stats[map[bool]string{true: "mid-step hook", false: "before-commit hook"}[midHook]]++
	}
	// The delivery's line goes before what its hook did.
	if d.crashed == "" && outcome != "" {
		how += " -> " + firstLine(outcome)
	}
	line := fmt.Sprintf("%d committer: %s (delivery %d)%s%s", r.step, r.describeMessage(d.body, true), d.receiveCount, how, r.jobState(d.body))
	r.history = append(r.history[:mark], append([]string{line}, r.history[mark:]...)...)
	r.model.check(actorIcekeeper, "the committer's "+r.describeMessage(d.body, true))
	r.countEnded()
	return true
}

// leaseLost says whether the job a commit request is for no longer holds
// its table's lease (superseded, released or ended).
func (r *safetyRun) leaseLost(body string) bool {
	var req messages.CommitRequest
	if err := messages.Decode([]byte(body), &req); err != nil {
		return false
	}
	jm := r.model.jobs[req.JobID]
	if jm == nil {
		return false
	}
	st := r.tableNamed(jm.table)
	return st != nil && r.model.leaseOwner(r.e.ctx, st) != jm.id
}

// countEnded counts the jobs committed, by kind (once each).
func (r *safetyRun) countEnded() {
	for _, id := range r.model.jobOrder {
		jm := r.model.jobs[id]
		key := "committed " + string(jm.kind)
		if jm.state == jobs.Committed && !r.counted[id] {
			r.counted[id] = true
			r.stats[key]++
			// Over s3a or s3n names: the table references such names
			// (an orphan cleanup: one under its location, aged).
			if named, old := r.model.respelled(r.tableNamed(jm.table)); named && (jm.kind != jobs.KindRemoveOrphans || old) {
				r.stats[key+" over s3a or s3n names"]++
			}
		}
	}
}

// tableOf is the table a message's job is on.
func (r *safetyRun) tableOf(body string) string {
	var head struct {
		JobID string `json:"job_id"`
		Table string `json:"table"`
	}
	if err := messages.Decode([]byte(body), &head); err != nil {
		return ""
	}
	if head.Table != "" {
		return head.Table
	}
	if jm := r.model.jobs[head.JobID]; jm != nil {
		return jm.table
	}
	return ""
}

// midHook is a hook between two calls of a stage: the model is checked
// (what the stage did so far), then another tool changes the stage's
// table (one time in four another one).
func (r *safetyRun) midHook(stage, tableName string) func(call string) {
	return func(call string) {
		r.hooked = true
		r.model.check(actorIcekeeper, fmt.Sprintf("the %s, before its %s", stage, call))
		st := r.tableNamed(tableName)
		if st == nil || r.rng.IntN(4) == 0 {
			st = r.tables[r.rng.IntN(len(r.tables))]
		}
		r.other(st, r.pickOp(concurrentOps), fmt.Sprintf("  [during the %s, before its %s] ", stage, call))
	}
}

// hook is the before-commit hook: right before icekeeper's committer
// commits to ident's table, the model is checked (what the committer did
// so far), then another tool changes that table (one time in four another
// one).
func (r *safetyRun) hook(ident table.Identifier) {
	r.hooked = true
	r.model.check(actorIcekeeper, "the committer, before its catalog commit")
	st := r.tableNamed(strings.Join(ident, "."))
	if st == nil || r.rng.IntN(4) == 0 {
		st = r.tables[r.rng.IntN(len(r.tables))]
	}
	r.other(st, r.pickOp(concurrentOps), "  [right before icekeeper's catalog commit to "+strings.Join(ident, ".")+"] ")
}

// duplicateStep delivers an earlier task or commit request again (a late
// duplicate, as SQS may deliver a message more than once).
func (r *safetyRun) duplicateStep() {
	bodies, q, which := r.commitBodies, r.e.deps.Commits, "commit request"
	if r.rng.IntN(2) == 0 {
		bodies, q, which = r.taskBodies, r.e.deps.Tasks, "task"
	}
	if len(bodies) == 0 {
		r.note("%d (no %s to send again)", r.step, which)
		return
	}
	body := bodies[r.rng.IntN(len(bodies))]
	if err := q.Send(r.e.ctx, body); err != nil {
		r.t.Fatalf("send again: %v", err)
	}
	r.stats["duplicate message"]++
	r.note("%d a %s is sent again: %s", r.step, which, r.describeMessage(body, q == r.e.deps.Commits))
}

// settle ends the history: no other tool any more; the queues are drained
// (commit requests by a late committer, which takes silent jobs over); a
// planner after the lease TTL visits each table with a job left in flight
// (which supersedes it and asks for its end); every job must end.
func (r *safetyRun) settle() {
	r.note("--- settle: the other tools stop; queues drained, late committers, late planners")
	for round := 0; round < 6 && !r.stopped; round++ {
		for i := 0; i < 80 && !r.stopped && r.taskStep(false); i++ {
			r.step++
		}
		for i := 0; i < 80 && !r.stopped && r.commitStep(false); i++ {
			r.step++
		}
		r.model.refreshJobs()
		left := r.model.inFlight()
		if len(left) == 0 || r.stopped {
			break
		}
		seen := map[string]bool{}
		for _, jm := range left {
			if st := r.tableNamed(jm.table); st != nil && !seen[st.name] {
				seen[st.name] = true
				r.step++
				r.planOn(st, jobs.KindExpire, true, false)
			}
		}
	}
	if r.stopped {
		return
	}
	r.model.refreshJobs()
	for _, jm := range r.model.inFlight() {
		r.fail(catNeverEnds, "%s job %s on %s never ends: still %s (%s) after the queues were drained, late committers took it over and late planners superseded it",
			jm.kind, jm.id, jm.table, jm.state, jm.reason)
	}
	cur := make([]*table.Table, len(r.model.tables))
	for i, tm := range r.model.tables {
		cur[i] = r.load(tm.st)
	}
	r.model.verifyRows("at the end", cur)
}

// report prints, for a failing seed, the replay command, the history up
// to the failure and each category's failures.
func (r *safetyRun) report(took time.Duration) {
	replay := fmt.Sprintf("ICEKEEPER_FUZZ_SEED=%d go test -count=1 ./tests -run 'TestSafety_NothingNeededIsEverDeleted' -v", r.seed)
	failed := false
	for _, c := range safetyCategories {
		if len(r.failures[c]) > 0 {
			failed = true
		}
	}
	committed := 0
	for _, jm := range r.model.jobs {
		if jm.state == jobs.Committed {
			committed++
		}
	}
	summary := fmt.Sprintf("seed %d: %d tables, %d steps, %d jobs (%d committed), %s", r.seed, len(r.tables), r.step, len(r.model.jobs), committed, took.Round(time.Second))
	if failed {
		r.t.Logf("%s\nreplay: %s\nhistory up to the failure:\n  %s", summary, replay, strings.Join(r.history, "\n  "))
	} else if os.Getenv("ICEKEEPER_SAFETY_HISTORY") != "" {
		r.t.Logf("%s\nhistory:\n  %s", summary, strings.Join(r.history, "\n  "))
	} else if testing.Verbose() {
		r.t.Logf("%s; exercised %v", summary, r.stats)
	}
	for _, c := range safetyCategories {
		if msgs := r.failures[c]; len(msgs) > 0 {
			r.t.Errorf("seed %d, %s:\n  %s\nreplay: %s", r.seed, c, strings.Join(msgs, "\n  "), replay)
		}
	}
}
