package messages

import (
	"errors"
	"slices"
	"testing"
)

// Each constructor builds a message of its kind, and the message survives
// the wire with the same kind.
func TestKinds_EachConstructorMakesItsKindAndDecodesAsIt(t *testing.T) {
	requests := map[RequestKind]CommitRequest{
		RequestCommit:        CommitJob("j"),
		RequestBatch:         CommitBatch("j", 2),
		RequestAbort:         AbortJob("j", "stalled", FailStalled),
		RequestDeletionsDone: DeletionsDone("j"),
		RequestListingDone:   ListingDone("j"),
		RequestExchangeReady: ExchangeReady("j", 3),
	}
	for _, kind := range RequestKinds {
		req, ok := requests[kind]
		if !ok {
			t.Errorf("no constructor tested for request kind %s", kind)
			continue
		}
		b, err := Encode(req)
		if err != nil {
			t.Fatal(err)
		}
		var got CommitRequest
		if err := Decode(b, &got); err != nil {
			t.Errorf("%s: %v", kind, err)
			continue
		}
		if got.Kind() != kind {
			t.Errorf("%s request decodes as %s", kind, got.Kind())
		}
	}

	tasks := map[TaskKind]Task{
		TaskCompact:        NewGroupTask("j", "db.t", 7, Pin{SnapshotID: 3}, PlanGroup{Index: 1, OutputSpecID: 2}),
		TaskExchangeMap:    {Version: FormatVersion, JobID: "j", Exchange: &Exchange{Role: ExchangeMap}},
		TaskExchangeReduce: {Version: FormatVersion, JobID: "j", Exchange: &Exchange{Role: ExchangeReduce}},
		TaskRewriteDeletes: {Version: FormatVersion, JobID: "j", Deletes: &DeleteRewrite{InputDeletes: []string{"a"}}},
		TaskDelete:         NewDeleteTask("j", "db.t", 7, DeleteTask{PartKey: "k"}),
		TaskList:           NewListTask("j", "db.t", 7, ListTask{Prefix: "p/"}),
	}
	for _, kind := range TaskKinds {
		task, ok := tasks[kind]
		if !ok {
			t.Errorf("no task tested for task kind %s", kind)
			continue
		}
		b, err := Encode(task)
		if err != nil {
			t.Fatal(err)
		}
		var got Task
		if err := Decode(b, &got); err != nil {
			t.Errorf("%s: %v", kind, err)
			continue
		}
		if got.Kind() != kind {
			t.Errorf("%s task decodes as %s", kind, got.Kind())
		}
	}
}

// A message whose fields say two kinds at once is malformed: no dispatcher
// ever picks the first of two flags.
func TestKinds_ContradictoryMessagesAreMalformed(t *testing.T) {
	requests := map[string]string{
		"abort and deletions done":     `{"v":1,"job_id":"j","abort":true,"deletions_done":true}`,
		"listing and deletions done":   `{"v":1,"job_id":"j","listing_done":true,"deletions_done":true}`,
		"exchange ready with a batch":  `{"v":1,"job_id":"j","exchange_ready":true,"exchange":1,"batch":2}`,
		"abort of one batch":           `{"v":1,"job_id":"j","abort":true,"batch":2}`,
		"exchange without ready":       `{"v":1,"job_id":"j","exchange":4}`,
		"reason without abort":         `{"v":1,"job_id":"j","reason":"why"}`,
		"class without abort":          `{"v":1,"job_id":"j","batch":1,"class":"rewrite"}`,
		"negative batch":               `{"v":1,"job_id":"j","batch":-1}`,
		"no job":                       `{"v":1,"deletions_done":true}`,
		"deletions and exchange ready": `{"v":1,"job_id":"j","deletions_done":true,"exchange_ready":true,"exchange":1}`,
	}
	for name, body := range requests {
		var r CommitRequest
		if err := Decode([]byte(body), &r); !errors.Is(err, ErrMalformed) {
			t.Errorf("request %s: Decode = %v, want ErrMalformed", name, err)
		}
	}
	tasks := map[string]string{
		"delete and list":         `{"v":1,"job_id":"j","delete":{"part_key":"k"},"list":{"prefix":"p"}}`,
		"deletes and exchange":    `{"v":1,"job_id":"j","deletes":{"input_deletes":[]},"exchange":{"role":"map"}}`,
		"delete and deletes":      `{"v":1,"job_id":"j","delete":{"part_key":"k"},"deletes":{"input_deletes":[]}}`,
		"exchange of no role":     `{"v":1,"job_id":"j","exchange":{"role":"shuffle"}}`,
		"list and exchange":       `{"v":1,"job_id":"j","list":{"prefix":"p"},"exchange":{"role":"reduce"}}`,
		"task of no job":          `{"v":1,"group":3}`,
		"three kinds in one task": `{"v":1,"job_id":"j","delete":{},"list":{},"deletes":{}}`,
	}
	for name, body := range tasks {
		var task Task
		if err := Decode([]byte(body), &task); !errors.Is(err, ErrMalformed) {
			t.Errorf("task %s: Decode = %v, want ErrMalformed", name, err)
		}
	}
}

// Every kind is listed once, so a dispatcher's switch can be checked
// against the list.
func TestKinds_ListsHaveEveryKindOnce(t *testing.T) {
	if got := len(slices.Compact(slices.Sorted(slices.Values(TaskKinds)))); got != len(TaskKinds) || got != 6 {
		t.Errorf("TaskKinds %v", TaskKinds)
	}
	if got := len(slices.Compact(slices.Sorted(slices.Values(RequestKinds)))); got != len(RequestKinds) || got != 6 {
		t.Errorf("RequestKinds %v", RequestKinds)
	}
}
