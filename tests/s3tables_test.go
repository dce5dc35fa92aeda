package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/google/uuid"

	"github.com/icekeeper/icekeeper/shared/catalogs"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/expire"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/harness/stages"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/outputs"
	"github.com/icekeeper/icekeeper/shared/plan"
	"github.com/icekeeper/icekeeper/shared/trigger"
)

// s3tablesStandIn plays an S3 table bucket: the REST stand-in as its
// Iceberg REST endpoint (signing name s3tables, warehouse the bucket's
// ARN), and its tables' storage. Each table gets its own emulator bucket
// named <id>--table-s3 as its location, as S3 Tables names them (Amazon S3
// User Guide, "Tables in S3 table buckets"), reached through a proxy in
// front of the emulator's S3 that refuses what table buckets refuse:
// DeleteObject, DeleteObjects and listing (Amazon S3 API Reference,
// "Supported Amazon S3 object-level API operations for S3 Tables"; the
// error a table bucket returns is not documented there, the proxy answers
// 405 MethodNotAllowed).
//
// Both record, for the function running at the time (as), the IAM action
// that authorizes each request, on the table's ARN with its namespace and
// name as the s3tables:namespace and s3tables:tableName condition keys
// (Service Authorization Reference, "Actions, resources, and condition
// keys for Amazon S3 Tables"; object reads are s3tables:GetTableData,
// writes s3tables:PutTableData, per "Access management for S3 Tables").
// The endpoint's REST operations map to: config → GetTableBucket, a
// namespace → GetNamespace, namespace listing → ListNamespaces, table
// listing → ListTables, load → GetTableMetadataLocation, exists → GetTable,
// commit → UpdateTableMetadataLocation (and PutTableData, as the endpoint
// writes the new metadata file for the caller), create → CreateTable.
//
// Simpler than S3 Tables: one bucket per table in the emulator rather than
// a managed namespace of storage, no maintenance, no table policies.
type s3tablesStandIn struct {
	t       *testing.T
	rest    *restStandIn
	restURL string
	arn     string
	storage *httptest.Server

	mu      sync.Mutex
	current string
	tables  map[string]s3table // by bucket
	byIdent map[string]s3table // by "ns.name"
	auths   []recordedCall
	refused []string
}

type s3table struct {
	id, namespace, name string
}

const testTableBucketARN = "arn:aws:s3tables:us-east-1:000000000000:bucket/lake"

func newS3TablesStandIn(t *testing.T) *s3tablesStandIn {
	t.Helper()
	st := &s3tablesStandIn{t: t, arn: testTableBucketARN, tables: map[string]s3table{}, byIdent: map[string]s3table{}}
	target, err := url.Parse(cloud.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	st.storage = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if st.storageRequest(r) {
			proxy.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusMethodNotAllowed)
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>MethodNotAllowed</Code><Message>%s %s is not supported by table buckets</Message></Error>`, r.Method, r.URL.RequestURI())
	}))
	t.Cleanup(st.storage.Close)
	// The endpoint itself writes metadata straight to the emulator.
	st.rest, st.restURL = newRESTStandIn(t, "s3tables", testRegion, "s3://unused", s3Props(cloud.URL))
	st.rest.locate = st.newTable
	st.rest.observe = st.restRequest
	return st
}

// s3Props are iceberg-go's S3 file IO properties for endpoint.
func s3Props(endpoint string) map[string]string {
	return map[string]string{
		"s3.endpoint": endpoint, "s3.region": testRegion,
		"s3.access-key-id": "test", "s3.secret-access-key": "test",
		"s3.force-virtual-addressing": "false",
	}
}

// configure points an env's catalog at the table bucket, as a deployment
// does: the REST endpoint, the bucket's ARN as warehouse, SigV4 with the
// signing name s3tables; table storage through the proxy.
func (st *s3tablesStandIn) configure(c *config.Config) {
	c.Catalog = catalogs.Config{Type: "rest", Name: "s3tables", URI: st.restURL, Warehouse: st.arn,
		SigV4: true, SigningName: "s3tables", SigningRegion: testRegion, Properties: s3Props(st.storage.URL)}
}

// as runs f as the function fn: requests made meanwhile are fn's.
func (st *s3tablesStandIn) as(fn string, f func()) {
	st.mu.Lock()
	st.current = fn
	st.mu.Unlock()
	defer func() {
		st.mu.Lock()
		st.current = ""
		st.mu.Unlock()
	}()
	f()
}

// newTable creates a new table's storage: its own <id>--table-s3 bucket.
func (st *s3tablesStandIn) newTable(ident table.Identifier) string {
	id := uuid.NewString()
	bucket := strings.ReplaceAll(id, "-", "")[:20] + "--table-s3"
	if _, err := cloud.Clients.S3.CreateBucket(st.t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		st.t.Errorf("create table bucket storage: %v", err)
	}
	tb := s3table{id: id, namespace: strings.Join(ident[:len(ident)-1], "."), name: ident[len(ident)-1]}
	st.mu.Lock()
	st.tables[bucket] = tb
	st.byIdent[tb.namespace+"."+tb.name] = tb
	st.mu.Unlock()
	return "s3://" + bucket
}

func (st *s3tablesStandIn) record(action string, tb *s3table) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.current == "" {
		return // the test's own setup
	}
	a := authorization{Action: action, Resource: st.arn}
	if tb != nil {
		a = authorization{Action: action, Resource: st.arn + "/table/" + tb.id, Namespace: tb.namespace, TableName: tb.name}
	}
	st.auths = append(st.auths, recordedCall{Function: st.current, Operation: action, Auth: []authorization{a}})
}

// recordNamespace records an action on the bucket within a namespace.
func (st *s3tablesStandIn) recordNamespace(action, namespace string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.current == "" {
		return // the test's own setup
	}
	a := authorization{Action: action, Resource: st.arn, Namespace: namespace}
	st.auths = append(st.auths, recordedCall{Function: st.current, Operation: action, Auth: []authorization{a}})
}

// restRequest records what authorizes one REST request.
func (st *s3tablesStandIn) restRequest(method string, parts []string) {
	tableOf := func(ns, name string) *s3table {
		st.mu.Lock()
		defer st.mu.Unlock()
		tb, ok := st.byIdent[strings.ReplaceAll(ns, "\x1f", ".")+"."+name]
		if !ok {
			return &s3table{id: "unknown", namespace: ns, name: name}
		}
		return &tb
	}
	switch {
	case parts[0] == "config":
		st.record("s3tables:GetTableBucket", nil)
	case len(parts) == 1 && parts[0] == "namespaces":
		st.record(map[string]string{http.MethodGet: "s3tables:ListNamespaces", http.MethodPost: "s3tables:CreateNamespace"}[method], nil)
	case len(parts) == 2:
		st.record("s3tables:GetNamespace", nil)
	case len(parts) == 3 && method == http.MethodGet:
		// Authorized on the bucket with the condition key
		// s3tables:namespace (Service Authorization Reference, Amazon S3
		// Tables, ListTables:
		// https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazons3tables.html).
		st.recordNamespace("s3tables:ListTables", strings.ReplaceAll(parts[1], "\x1f", "."))
	case len(parts) == 3:
		st.record("s3tables:CreateTable", nil)
	case len(parts) == 4:
		tb := tableOf(parts[1], parts[3])
		switch method {
		case http.MethodHead:
			st.record("s3tables:GetTable", tb)
		case http.MethodGet:
			st.record("s3tables:GetTableMetadataLocation", tb)
		case http.MethodPost:
			st.record("s3tables:UpdateTableMetadataLocation", tb)
			st.record("s3tables:PutTableData", tb)
		}
	}
}

// storageRequest records one object request and reports whether a table
// bucket serves it.
func (st *s3tablesStandIn) storageRequest(r *http.Request) bool {
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	st.mu.Lock()
	tb, ok := st.tables[bucket]
	st.mu.Unlock()
	if !ok {
		return true // not a table bucket's storage
	}
	q := r.URL.Query()
	switch {
	case r.Method == http.MethodDelete, r.Method == http.MethodPost && q.Has("delete"), r.Method == http.MethodGet && key == "":
		st.mu.Lock()
		st.refused = append(st.refused, r.Method+" "+r.URL.RequestURI())
		st.mu.Unlock()
		return false
	case r.Method == http.MethodGet, r.Method == http.MethodHead:
		st.record("s3tables:GetTableData", &tb)
	default:
		st.record("s3tables:PutTableData", &tb)
	}
	return true
}

// objects lists every object key of the table's storage, straight from the
// emulator.
func (st *s3tablesStandIn) objects(location string) map[string]bool {
	st.t.Helper()
	bucket := strings.TrimPrefix(location, "s3://")
	out := map[string]bool{}
	p := s3.NewListObjectsV2Paginator(cloud.Clients.S3, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(st.t.Context())
		if err != nil {
			st.t.Fatal(err)
		}
		for _, o := range page.Contents {
			out[aws.ToString(o.Key)] = true
		}
	}
	return out
}

// checkPolicies evaluates every recorded request against the synthesized
// policies of a table-bucket deployment (infra/testdata/policies-s3tables.json,
// written by the stack's tests): it fails on a request the function's
// policy denies, and on an s3tables: grant no request used.
func (st *s3tablesStandIn) checkPolicies() {
	st.t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "infra", "testdata", "policies-s3tables.json"))
	if err != nil {
		st.t.Fatal(err)
	}
	var policies map[string][]policyStatement
	if err := json.Unmarshal(raw, &policies); err != nil {
		st.t.Fatal(err)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	var problems []string
	used := map[string]bool{}
	for _, c := range st.auths {
		for _, a := range c.Auth {
			sid, ok := allowed(policies[c.Function], a)
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: %s on %s (namespace %q, table %q) is denied", c.Function, a.Action, a.Resource, a.Namespace, a.TableName))
				continue
			}
			used[c.Function+"/"+sid+"/"+a.Action] = true
		}
	}
	for fn, sts := range policies {
		for _, s := range sts {
			for _, act := range s.Actions {
				if s.Effect != "Deny" && strings.HasPrefix(act, "s3tables:") && !used[fn+"/"+s.Sid+"/"+act] && s3tablesUsedElsewhere[act] == "" {
					problems = append(problems, fmt.Sprintf("%s statement %q grants %s, which no request used", fn, s.Sid, act))
				}
			}
		}
	}
	sort.Strings(problems)
	if len(problems) > 0 {
		st.t.Fatalf("the synthesized S3 Tables policies and the recorded requests disagree:\n  %s", strings.Join(problems, "\n  "))
	}
}

// s3tablesUsedElsewhere are s3tables: grants no request of this test
// makes, and the path that needs them.
var s3tablesUsedElsewhere = map[string]string{}

// TestS3Tables_SweepAndCustomEventsCompactATableBucketTable: a table in an
// S3 table bucket, reached through the S3 Tables Iceberg REST endpoint, is
// planned by the sweep and compacted, with every row kept; then a custom
// commit event plans it again, another tool undoing a delete aborts that
// job, and the abort leaves the job's files to the bucket's unreferenced
// file removal instead of deleting them (a table bucket refuses deletes
// and listings: none is attempted). Every request each function made is
// allowed by the stack's S3 Tables policies, and every s3tables: grant is
// used.
func TestS3Tables_SweepAndCustomEventsCompactATableBucketTable(t *testing.T) {
	st := newS3TablesStandIn(t)
	// A short cooldown, so the commit event after the sweep's job plans.
	d := setupDispatch(t, config.ModeActive, "demo", st.configure, func(c *config.Config) { c.MinInterval = time.Millisecond })
	opts := withProps(smallTable, optedIn)
	tbl := d.createNamed("demo.events", opts)
	if !outputs.InTableBucket(tbl.Location()) {
		t.Fatalf("table location %s is not a table bucket's", tbl.Location())
	}
	// The planner's and the committer's cold starts open the catalog
	// (GET /v1/config); rewriters have none.
	for _, fn := range []string{"Planner", "Committer"} {
		st.as(fn, func() {
			if _, err := stages.OpenCatalog(d.ctx, d.cfg, cloud.Clients); err != nil {
				t.Fatal(err)
			}
		})
	}
	want := d.fingerprint()

	var resp1 = func() (r []trigger.TableOutcome) {
		st.as("Planner", func() { r = d.handle(mustRead(t, "../events/scheduled.json")).Tables })
		return r
	}()
	if len(resp1) != 1 || resp1[0].Action != trigger.ActionPlanned {
		t.Fatalf("sweep: %+v, want demo.events planned", resp1)
	}
	st.as("Rewriter", func() { d.drainTasks() })
	st.as("Committer", func() { d.drainCommits() })
	d.requireCommitted(resp1[0].Plan.JobID, want)

	// More small files, announced by a custom commit event.
	for i := range 6 {
		if _, err := sampletable.AppendRows(d.ctx, d.load(), int64(2_000_000+100*i), 2, 5); err != nil {
			t.Fatal(err)
		}
	}
	// And a delete of some of their rows, which the next job applies.
	if _, err := sampletable.DeleteByPosition(d.ctx, d.load(), []int64{2_000_001, 2_000_102}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	var resp2 []trigger.TableOutcome
	st.as("Planner", func() { resp2 = d.handle(commitEvent("demo.events")).Tables })
	if len(resp2) != 1 || resp2[0].Action != trigger.ActionPlanned {
		t.Fatalf("commit event: %+v, want demo.events planned", resp2)
	}
	st.as("Rewriter", func() { d.drainTasks() })
	before := st.objects(tbl.Location())
	// Another tool undoes a delete of a file the job rewrote, before the
	// commit.
	d.undeleteConcurrently()
	want = d.fingerprint()
	st.as("Committer", func() { d.drainCommits() })
	j := d.job(resp2[0].Plan.JobID)
	if j.State != jobs.Aborted || !strings.Contains(j.Reason, undoneDelete) {
		t.Fatalf("job %s (%s), want aborted for the undone delete", j.State, j.Reason)
	}
	if got := d.fingerprint(); got != want {
		t.Fatalf("rows %s, want %s", got, want)
	}
	// A snapshot expiry: committed through the endpoint; the files it
	// frees are left to the bucket (nothing is deleted or listed).
	d.setProperties(iceberg.Properties{expire.MinSnapshotsToKeepKey: "1", expire.MaxSnapshotAgeMsKey: "1"})
	time.Sleep(10 * time.Millisecond)
	var exp plan.Result
	st.as("Planner", func() {
		var err error
		if exp, err = d.env.planner.PlanExpiry(d.ctx, "demo.events", "test"); err != nil {
			t.Fatal(err)
		}
	})
	if exp.Outcome != plan.OutcomePlanned {
		t.Fatalf("expiry: %+v", exp)
	}
	st.as("Committer", func() { d.drainCommits() })
	st.as("Rewriter", func() { d.drainTasks() })
	st.as("Committer", func() { d.drainCommits() })
	if j := d.job(exp.JobID); j.State != jobs.Committed {
		t.Fatalf("expiry job %s (%s)", j.State, j.Reason)
	}
	if n := len(d.load().Metadata().Snapshots()); n != 1 {
		t.Fatalf("%d snapshots after the expiry, want 1", n)
	}
	if got := d.fingerprint(); got != want {
		t.Fatalf("rows %s after the expiry, want %s", got, want)
	}
	after := st.objects(tbl.Location())
	for k := range before {
		if !after[k] {
			t.Errorf("%s was deleted; a table bucket accepts no delete", k)
		}
	}
	if len(st.refused) > 0 {
		t.Errorf("requests a table bucket refuses were made: %v", st.refused)
	}
	st.checkPolicies()
}
