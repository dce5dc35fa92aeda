package soak

// The three functions as Lambda runs them: the planner invoked
// asynchronously by EventBridge (the sweep schedule, commit events, query
// signals, continuation events), the rewriter and the committer by their
// queues' event source mappings (pollers here, package localrun), and
// what each invocation costs counted.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	lambdaevents "github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/icekeeper/icekeeper/events"
	"github.com/icekeeper/icekeeper/shared/audit"
	"github.com/icekeeper/icekeeper/shared/harness/localrun"
	"github.com/icekeeper/icekeeper/shared/queue"
)

// Function names, as the stack names its functions.
const (
	fnPlanner   = "planner"
	fnRewriter  = "rewriter"
	fnCommitter = "committer"
)

// invocation totals of one function.
type fnStats struct {
	Invocations int64         `json:"invocations"`
	Errors      int64         `json:"errors"`
	Wall        time.Duration `json:"wall"`
	// Messages are the queue messages delivered (SQS-driven functions).
	Messages int64 `json:"messages,omitempty"`
	// ErrorSamples are the first few errors, for the report.
	ErrorSamples []string `json:"error_samples,omitempty"`
}

type invocations struct {
	mu sync.Mutex
	by map[string]*fnStats
	// outcomes counts the planner's table outcomes by action and skip
	// reason (why a table was or was not planned).
	outcomes map[string]int
}

func (v *invocations) outcome(action, skip, kind string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.outcomes == nil {
		v.outcomes = map[string]int{}
	}
	k := action
	if skip != "" {
		k += " " + skip
	}
	if kind != "" {
		k += " " + kind
	}
	v.outcomes[k]++
}

func (v *invocations) record(fn string, took time.Duration, messages int, err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.by == nil {
		v.by = map[string]*fnStats{}
	}
	s := v.by[fn]
	if s == nil {
		s = &fnStats{}
		v.by[fn] = s
	}
	s.Invocations++
	s.Wall += took
	s.Messages += int64(messages)
	if err != nil {
		s.Errors++
		if len(s.ErrorSamples) < 5 {
			s.ErrorSamples = append(s.ErrorSamples, err.Error())
		}
	}
}

func (v *invocations) snapshot() map[string]fnStats {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := map[string]fnStats{}
	for k, s := range v.by {
		out[k] = *s
	}
	return out
}

// plannerTimeout ends each planner invocation as Lambda ends it at the
// stack's planner timeout (infra/settings.go): a sweep that would outlast
// it plans from what it visited and leaves a cursor (package trigger).
const plannerTimeout = 5 * time.Minute

// send invokes the planner asynchronously with an event.
func (f *fleet) send(raw []byte) {
	f.pending.Add(1)
	f.events <- raw
}

// plannerLoop is one of the planner's concurrent executions.
func (f *fleet) plannerLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case raw := <-f.events:
			f.invokePlanner(ctx, raw)
			f.pending.Add(-1)
		}
	}
}

// invokePlanner runs the handler once; a failed invocation is retried as
// Lambda retries an asynchronous invocation (twice).
func (f *fleet) invokePlanner(ctx context.Context, raw []byte) {
	for attempt := 0; attempt < 3; attempt++ {
		start := time.Now()
		ictx, cancel := context.WithTimeout(ctx, plannerTimeout)
		resp, err := f.planner.Handle(ictx, raw)
		cancel()
		f.inv.record(fnPlanner, time.Since(start), 0, err)
		for _, t := range resp.Tables {
			kind := ""
			if t.Plan != nil {
				kind = string(t.Plan.Outcome)
			}
			f.inv.outcome(string(t.Action), t.Skip, kind)
			if t.Plan != nil && t.Plan.JobID != "" {
				f.jobsMu.Lock()
				f.jobIDs[t.Plan.JobID] = t.Table
				f.jobsMu.Unlock()
			}
		}
		if err == nil || ctx.Err() != nil {
			return
		}
	}
}

// poll stands in for an event source mapping: it delivers q's messages to
// h one at a time until ctx ends.
func (f *fleet) poll(ctx context.Context, fn string, q *queue.Queue, h localrun.BatchHandler) {
	counted := func(ctx context.Context, ev lambdaevents.SQSEvent) (lambdaevents.SQSEventResponse, error) {
		start := time.Now()
		resp, err := h(ctx, ev)
		f.inv.record(fn, time.Since(start), len(ev.Records), err)
		return resp, err
	}
	for ctx.Err() == nil {
		st, err := localrun.Drain(ctx, q, counted, 1, 1)
		if err != nil && ctx.Err() == nil {
			fmt.Fprintf(f.o.Progress, "soak: %s poller: %v\n", fn, err)
		}
		if st.Delivered == 0 {
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

// bus is the EventBridge client the committer puts its events with: each
// goes to the emulator (and the request counter), and a continuation
// event also to the planner, as the stack's rule delivers it.
type bus struct {
	next audit.EventBridge
	f    *fleet
}

func (b *bus) PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, opts ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error) {
	out, err := b.next.PutEvents(ctx, in, opts...)
	if err != nil {
		return out, err
	}
	for _, e := range in.Entries {
		if aws.ToString(e.DetailType) != events.DetailTypeContinue {
			continue
		}
		raw, _ := json.Marshal(map[string]any{
			"version": "0", "id": fmt.Sprintf("soak-continue-%d", time.Now().UnixNano()), "source": aws.ToString(e.Source),
			"detail-type": aws.ToString(e.DetailType), "account": "123456789012", "region": "us-east-1",
			"time": time.Now().UTC().Format(time.RFC3339), "resources": []string{}, "detail": json.RawMessage(aws.ToString(e.Detail)),
		})
		b.f.send(raw)
	}
	return out, nil
}

// commitEvent is the event a writer's commit produces.
func commitEvent(table string) []byte {
	ns, name, _ := strings.Cut(table, ".")
	raw, _ := json.Marshal(map[string]any{"version": "0", "id": fmt.Sprintf("soak-commit-%d", time.Now().UnixNano()), "source": events.SourceCommit,
		"detail-type": events.DetailTypeCommit, "account": "123456789012", "region": "us-east-1", "time": time.Now().UTC().Format(time.RFC3339), "resources": []string{},
		"detail": map[string]any{"namespace": ns, "table": name, "operation": "append"}})
	return raw
}

// queryEvent is a query signal on a queried table: point lookups on id
// and range scans on amount, in one region.
func queryEvent(table string, n int) []byte {
	ns, name, _ := strings.Cut(table, ".")
	raw, _ := json.Marshal(map[string]any{"version": "0", "id": fmt.Sprintf("soak-query-%d", time.Now().UnixNano()), "source": events.SourceCommit,
		"detail-type": events.DetailTypeQuery, "account": "123456789012", "region": "us-east-1", "time": time.Now().UTC().Format(time.RFC3339), "resources": []string{},
		"detail": map[string]any{"namespace": ns, "table": name,
			"columns":       []map[string]string{{"column": "id", "predicate": "eq"}, {"column": "amount", "predicate": "range"}},
			"bytes_scanned": 64 << 20, "rows_returned": 10, "engine": "trino", "query_id": fmt.Sprintf("q-%s-%d", name, n)}})
	return raw
}

func io2(a, b io.Writer) io.Writer { return io.MultiWriter(a, b) }

// emfSink keeps each EMF line's numeric members with the wall time it was
// written at.
type emfSink struct {
	mu    sync.Mutex
	lines []emfLine
}

type emfLine struct {
	at     time.Time
	table  string
	values map[string]float64
}

func (s *emfSink) Write(p []byte) (int, error) {
	now := time.Now()
	for _, line := range strings.Split(strings.TrimSpace(string(p)), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		l := emfLine{at: now, values: map[string]float64{}}
		l.table, _ = m["Table"].(string)
		for k, v := range m {
			if x, ok := v.(float64); ok {
				l.values[k] = x
			}
		}
		s.mu.Lock()
		s.lines = append(s.lines, l)
		s.mu.Unlock()
	}
	return len(p), nil
}

// total sums a metric over every line.
func (s *emfSink) total(name string) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n float64
	for _, l := range s.lines {
		n += l.values[name]
	}
	return n
}

func (s *emfSink) all() []emfLine {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]emfLine(nil), s.lines...)
}
