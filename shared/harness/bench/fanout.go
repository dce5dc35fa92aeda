package bench

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/icekeeper/icekeeper/shared/awsclients"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/harness/awsrequests"
	"github.com/icekeeper/icekeeper/shared/harness/localcloud"
	"github.com/icekeeper/icekeeper/shared/harness/localrun"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/harness/stages"
	"github.com/icekeeper/icekeeper/shared/health"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/metrics"
	"github.com/icekeeper/icekeeper/shared/optin"
)

// Fan-out shape: each group is one partition of FanoutFilesPerGroup tiny
// files (iceberg-go's compaction rewrites a partition of at least 5 small
// files, compaction.DefaultMinInputFiles), rewritten by a real rewriter.
const (
	FanoutFilesPerGroup = 5
	fanoutRowsPerFile   = 20
)

// FanoutPoint is one measured job of many groups: planned by the planner,
// every group rewritten by a real rewriter (FanoutRewriters at a time, in
// this process), and committed by the committer in its own process. AWS
// counts every request of the job's stages; CommitAWS the committer's.
type FanoutPoint struct {
	Groups    int  `json:"groups"`
	Rewriters int  `json:"rewriters"`
	Committed bool `json:"committed"`
	// DoneGroups are the groups the job item settled done; Snapshots the
	// snapshots the job added to the table (one commit: 1).
	DoneGroups int `json:"done_groups"`
	Snapshots  int `json:"snapshots"`
	// RowsBefore and RowsAfter are the table's live rows; FilesBefore and
	// FilesAfter its data files.
	RowsBefore  int64 `json:"rows_before"`
	RowsAfter   int64 `json:"rows_after"`
	FilesBefore int   `json:"files_before"`
	FilesAfter  int   `json:"files_after"`
	// CommitterInvocations are the commit queue's deliveries.
	CommitterInvocations int `json:"committer_invocations"`
	// RewriterDeliveries are the task queue's deliveries.
	RewriterDeliveries int                `json:"rewriter_deliveries"`
	Setup              time.Duration      `json:"setup_ns"`
	PlanWall           time.Duration      `json:"plan_wall_ns"`
	RewriteWall        time.Duration      `json:"rewrite_wall_ns"`
	CommitWall         time.Duration      `json:"commit_wall_ns"`
	CommitCPU          time.Duration      `json:"commit_cpu_ns"`
	CommitPeakRSS      int64              `json:"commit_peak_rss_bytes"`
	AWS                awsrequests.Counts `json:"aws"`
	CommitAWS          awsrequests.Counts `json:"commit_aws"`
	// JobItemBytes is the job item's size at the end, as DynamoDB counts
	// it (awsrequests.ItemBytes): DynamoDB meters an UpdateItem by the larger of the item's
	// size before and after it, which the request counter does not see.
	JobItemBytes int `json:"job_item_bytes"`
}

// FanoutRewriters is how many rewriters run at a time: this machine's
// share (the rest of the groups wait in the task queue, as they would
// behind a reserved concurrency).
const FanoutRewriters = 2

// PerGroup is a count per group.
func (p FanoutPoint) PerGroup(n float64) float64 { return n / float64(max(p.Groups, 1)) }

// RunFanouts measures a job of each number of groups.
func RunFanouts(ctx context.Context, o Options, sizes []int) ([]FanoutPoint, error) {
	o.defaults()
	return measureEach(ctx, "fan-out of %d groups", sizes, func(cloud *localcloud.Cloud, counter *awsrequests.Proxy, n int) (FanoutPoint, error) {
		return runFanout(ctx, o, cloud, counter, n)
	})
}

// sub is what a counted between b and a (a after b).
func sub(a, b awsrequests.Counts) awsrequests.Counts {
	out := awsrequests.Counts{Calls: map[string]int64{}, WriteUnits: a.WriteUnits - b.WriteUnits, ReadUnits: a.ReadUnits - b.ReadUnits,
		SQSRequests: a.SQSRequests - b.SQSRequests, Events: a.Events - b.Events}
	for k, v := range a.Calls {
		if d := v - b.Calls[k]; d != 0 {
			out.Calls[k] = d
		}
	}
	return out
}

func runFanout(ctx context.Context, o Options, cloud *localcloud.Cloud, counter *awsrequests.Proxy, n int) (FanoutPoint, error) {
	pt := FanoutPoint{Groups: n, Rewriters: FanoutRewriters}
	cat, cc, err := openCatalog(ctx, filepath.Join(o.Dir, fmt.Sprintf("fanout-%d", n)))
	if err != nil {
		return pt, err
	}
	name := fmt.Sprintf("fanout.g%d", n)
	ident := strings.Split(name, ".")
	o.progress("fan-out: writing %d partitions of %d files", n, FanoutFilesPerGroup)
	start := time.Now()
	tbl, err := sampletable.Create(ctx, cat, ident, sampletable.Options{Partitions: n, Files: FanoutFilesPerGroup, RowsPerFile: fanoutRowsPerFile,
		Properties: map[string]string{optin.PropertyEnabled: "true"}})
	if err != nil {
		return pt, err
	}
	before, err := health.Measure(ctx, tbl)
	if err != nil {
		return pt, err
	}
	pt.RowsBefore, pt.FilesBefore = before.DataRecords, before.DataFiles
	snapsBefore := len(tbl.Metadata().Snapshots())
	pt.Setup = time.Since(start)

	cfg := config.Defaults()
	cfg.Catalog = cc
	cfg.LeaseTTL = time.Hour
	res, err := cloud.Provision(ctx, "fanout", "", cfg.MaxTaskAttempts)
	if err != nil {
		return pt, err
	}
	res.Apply(&cfg)
	cfg.Mode, cfg.Grants = config.ModeActive, ident[0]
	// The stages reach AWS through the counter; the harness reads the job
	// through its own clients.
	deps, err := stages.NewDeps(cfg, awsclients.ForEndpoint(counter.URL, "us-east-1", localcloud.PlainRequestBodies), slog.New(slog.DiscardHandler), stages.AllNeeds...)
	if err != nil {
		return pt, err
	}
	deps.Metrics = metrics.NewEmitter(discard{}, "", nil)
	st, _, err := deps.LocalStages(cat)
	if err != nil {
		return pt, err
	}
	watch, err := jobs.NewStore(cloud.Clients.DynamoDB, cfg.JobsTable, time.Now)
	if err != nil {
		return pt, err
	}
	env := []string{"AWS_ENDPOINT_URL=" + counter.URL, "AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test"}
	for k, v := range cfg.Env() {
		env = append(env, k+"="+v)
	}

	counter.Reset()
	o.progress("fan-out: planning %d groups", n)
	t0 := time.Now()
	pr, err := st.Plan.PlanTable(ctx, name, "bench")
	if err != nil {
		return pt, err
	}
	pt.PlanWall = time.Since(t0)
	if pr.JobID == "" || pr.Groups != n {
		return pt, fmt.Errorf("planned %d groups (%s: %s), want %d", pr.Groups, pr.Outcome, pr.Reason, n)
	}
	var j jobs.Job
	deadline := time.Now().Add(roundsFor)
	for round := 0; ; round++ {
		o.progress("fan-out: rewriting %d groups, %d rewriters (round %d)", n, FanoutRewriters, round+1)
		t0 = time.Now()
		var wg sync.WaitGroup
		var mu sync.Mutex
		var errs []error
		for range FanoutRewriters {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s, err := localrun.Drain(ctx, st.Tasks, st.Rewriter, 1, 0)
				mu.Lock()
				defer mu.Unlock()
				pt.RewriterDeliveries += s.Delivered
				if err != nil {
					errs = append(errs, err)
				}
			}()
		}
		wg.Wait()
		pt.RewriteWall += time.Since(t0)
		if len(errs) > 0 {
			return pt, errs[0]
		}
		beforeCommit := counter.Counts()
		o.progress("fan-out: committing")
		p, err := runChild(ctx, o.Self, coordinatorEnv(o, env), "commit", struct{}{})
		if err != nil {
			return pt, err
		}
		var cs localrun.Stats
		if err := decodeOut(p, &cs); err != nil {
			return pt, err
		}
		pt.CommitWall += p.Wall
		pt.CommitCPU += p.CPU
		pt.CommitPeakRSS = max(pt.CommitPeakRSS, p.PeakRSS)
		pt.CommitterInvocations += cs.Delivered
		c := sub(counter.Counts(), beforeCommit)
		pt.CommitAWS.Add(c)
		if j, err = watch.Get(ctx, pr.JobID); err != nil {
			return pt, err
		}
		if j.State.Terminal() || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second) // a delivery cut short comes back after its visibility timeout
	}
	pt.AWS = counter.Counts()
	pt.Committed = j.State == jobs.Committed
	pt.DoneGroups = len(j.DoneGroups)
	if !pt.Committed {
		return pt, fmt.Errorf("job %s: %s (%s)", j.ID, j.State, j.Reason)
	}
	item, err := cloud.Clients.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(cfg.JobsTable),
		Key: map[string]types.AttributeValue{"job_id": &types.AttributeValueMemberS{Value: j.ID}, "item_key": &types.AttributeValueMemberS{Value: "job"}}})
	if err == nil {
		pt.JobItemBytes = awsrequests.ItemBytes(item.Item)
	}
	after, err := cat.LoadTable(ctx, table.Identifier(ident))
	if err != nil {
		return pt, err
	}
	pt.Snapshots = len(after.Metadata().Snapshots()) - snapsBefore
	st2, err := health.Measure(ctx, after)
	if err != nil {
		return pt, err
	}
	pt.RowsAfter, pt.FilesAfter = st2.DataRecords, st2.DataFiles
	return pt, nil
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// fanouts renders the fan-out measurements.
func (r Report) fanouts() string {
	if len(r.Fanouts) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "### Fan-out: one job of many groups\n\nA table of n partitions of %d tiny files each, planned as one job of n groups, each group rewritten by a real rewriter (%d at a time in the harness's process; the rest wait in the task queue), then committed by the committer in its own process. Requests are the whole job's (planner, rewriters, committer) unless marked committer.\n\n",
		FanoutFilesPerGroup, FanoutRewriters)
	b.WriteString("| groups | committed | snapshots added | groups done | files before → after | rewrite wall s | committer wall s | committer CPU s | committer ms per group | committer peak RSS MB | DynamoDB calls per group | DynamoDB WRU per group | SQS requests per group | committer DynamoDB calls per group | committer SQS requests | job item KB |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, p := range r.Fanouts {
		fmt.Fprintf(&b, "| %d | %v | %d | %d | %d → %d | %.1f | %.1f | %.1f | %.1f | %.0f | %.2f | %.2f | %.2f | %.2f | %d | %.1f |\n", p.Groups, p.Committed, p.Snapshots, p.DoneGroups, p.FilesBefore, p.FilesAfter,
			p.RewriteWall.Seconds(), p.CommitWall.Seconds(), p.CommitCPU.Seconds(), float64(p.CommitWall.Milliseconds())/float64(max(p.Groups, 1)), float64(p.CommitPeakRSS)/(1<<20),
			p.PerGroup(float64(p.AWS.Service(awsrequests.DynamoDB))), p.PerGroup(p.AWS.WriteUnits), p.PerGroup(float64(p.AWS.SQSRequests)),
			p.PerGroup(float64(p.CommitAWS.Service(awsrequests.DynamoDB))), p.CommitAWS.SQSRequests, float64(p.JobItemBytes)/1024)
	}
	b.WriteString("\nEach job's calls by operation:\n\n")
	for _, p := range r.Fanouts {
		ops := p.AWS.Sorted()
		sort.Strings(ops)
		var parts []string
		for _, op := range ops {
			parts = append(parts, fmt.Sprintf("%s %d", op, p.AWS.Calls[op]))
		}
		fmt.Fprintf(&b, "- %d groups: %s\n", p.Groups, strings.Join(parts, ", "))
	}
	b.WriteString("\n")
	return b.String()
}
