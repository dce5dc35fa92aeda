package awsrequests

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestProxy_CountsEachServicesOperationsAndWhatTheyBill sends the shapes
// of requests the stages send through the proxy to a stand-in endpoint and
// checks the operations counted and the units metered.
func TestProxy_CountsEachServicesOperationsAndWhatTheyBill(t *testing.T) {
	item := strings.Repeat("x", 9<<10) // a 9 KB read
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".GetItem") {
			io.WriteString(w, `{"Item":{"v":{"S":"`+item+`"}}}`)
			return
		}
		io.WriteString(w, "{}")
	}))
	defer backend.Close()
	p, err := Start(backend.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	send := func(target, body string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, p.URL+"/", strings.NewReader(body))
		if target != "" {
			req.Header.Set("X-Amz-Target", target)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	send("DynamoDB_20120810.PutItem", `{"Item":{"v":{"S":"`+strings.Repeat("y", 2500)+`"}}}`)    // 3 write units
	send("DynamoDB_20120810.GetItem", `{"Key":{}}`)                                              // 3 read units (9 KB)
	send("DynamoDB_20120810.TransactWriteItems", `{"TransactItems":[{"Put":{}},{"Update":{}}]}`) // 2 items, twice
	send("AmazonSQS.SendMessage", `{"MessageBody":"`+strings.Repeat("m", 70<<10)+`"}`)           // 2 chunks
	send("AmazonSQS.ReceiveMessage", `{}`)
	send("AWSEvents.PutEvents", `{"Entries":[{"Detail":"{}"},{"Detail":"{}"},{"Detail":"{}"}]}`)
	req, _ := http.NewRequest(http.MethodGet, p.URL+"/bucket/jobs/plan.json", nil)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	// EventBridge Scheduler is REST like S3: its signature's scope tells.
	req, _ = http.NewRequest(http.MethodPost, p.URL+"/schedules/icekeeper-abc", strings.NewReader("{}"))
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=test/20261205/us-east-1/scheduler/aws4_request, SignedHeaders=host, Signature=x")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}

	c := p.Counts()
	for op, want := range map[string]int64{"dynamodb:PutItem": 1, "dynamodb:GetItem": 1, "dynamodb:TransactWriteItems": 1, "sqs:SendMessage": 1, "sqs:ReceiveMessage": 1, "events:PutEvents": 1, "s3:GetObject": 1, "scheduler:POST schedules": 1} {
		if c.Calls[op] != want {
			t.Errorf("%s counted %d times, want %d (all: %v)", op, c.Calls[op], want, c.Calls)
		}
	}
	if c.WriteUnits != 3+4 || c.ReadUnits != 3 {
		t.Errorf("DynamoDB units: %v write, %v read; want 7 (3 for a 2.5 KB put, 2x2 for a transaction of two) and 3 (a 9 KB read)", c.WriteUnits, c.ReadUnits)
	}
	if c.SQSRequests != 3 || c.Events != 3 {
		t.Errorf("SQS requests %d (want 3: a 70 KB message is two), EventBridge events %d (want 3)", c.SQSRequests, c.Events)
	}
	if c.S3Keys["s3:GetObject jobs/plan.json"] != 1 || len(c.S3Keys) != 1 {
		t.Errorf("S3 requests by key kind: %v, want one GetObject of jobs/plan.json", c.S3Keys)
	}
	if c.Service(DynamoDB) != 3 || c.Service(SQS) != 2 {
		t.Errorf("per service: %d DynamoDB, %d SQS calls", c.Service(DynamoDB), c.Service(SQS))
	}
}

// TestKeyKind_NamesTheKindOfObjectNotTheObject checks that the names a
// table, a job or a moment gives a key are folded into one kind.
func TestKeyKind_NamesTheKindOfObjectNotTheObject(t *testing.T) {
	for path, want := range map[string]string{
		"/b/jobs/2f1c9a/descriptors/00001-a1.json": "jobs/*/descriptors/*.json",
		"/b/jobs/2f1c9a/plan.json":                 "jobs/*/plan.json",
		"/b/health/ns.t1/latest.json":              "health/*/latest.json",
		"/b/health/ns.t1/20261205T101010Z.json":    "health/*/*.json",
		"/b/ledger":                                "ledger",
		"/b":                                       "",
		"/b/":                                      "",
	} {
		if got := KeyKind(path); got != want {
			t.Errorf("KeyKind(%q) = %q, want %q", path, got, want)
		}
	}
}
