package localstack

import (
	"context"
	"encoding/json"
	"github.com/icekeeper/icekeeper/shared/harness/gluestandin"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/icekeeper/icekeeper/shared/catalogs"
	"github.com/icekeeper/icekeeper/shared/harness/fingerprint"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/health"
	"github.com/icekeeper/icekeeper/shared/optin"
)

// pipelineStack is the second deployment: the same stack and settings, its
// catalog the Glue stand-in (catalog property glue.endpoint), the sweep
// hourly as by default.
const pipelineStack = "IcekeeperPipeline"

// pipelineContext also sets s3.endpoint: with glue.endpoint set, icekeeper
// hands iceberg-go an AWS configuration whose base endpoint is Glue's
// (shared/catalogs/catalogs.go), and iceberg-go's S3 FileIO uses that
// configuration unless s3.endpoint is given (third_party/iceberg-go/io/
// gocloud/s3/s3.go, createS3Bucket): without it the tables' files were
// read from the Glue endpoint ("GetObject ... StatusCode: 400 ... Bad
// Request" from the stand-in).
func pipelineContext(assets, glueURL, s3Endpoint string) map[string]any {
	ctx := deployContext(assets)
	ctx["stackName"] = pipelineStack
	ctx["catalogProperties"] = pipelineCatalogProperties(glueURL, s3Endpoint)
	delete(ctx, "sweepSchedule")
	return ctx
}

func pipelineCatalogProperties(glueURL, s3Endpoint string) string {
	return "glue.endpoint=" + glueURL + ",glue.region=" + region + ",s3.endpoint=" + s3Endpoint + ",s3.region=" + region
}

// checkPipeline: a compaction end to end on LocalStack, by the second
// stack's functions. The test writes a merge-on-read table (v2, position
// and equality deletes, two partitions, six small files each) into
// s3://warehouse, LocalStack's S3, registered in the Glue stand-in, with
// the owner's key set, and announces the commit with the custom event. From
// there nothing is the test's: the rule invokes the planner (LocalStack's
// EventBridge and Lambda), which plans and sends tasks to the task queue,
// the event source mapping hands them to the rewriter, which writes the
// new files to S3 and the commit request to the commit queue, whose mapping
// hands it to the committer, which commits through Glue. The leases and
// jobs are in the stack's DynamoDB tables (moto's, in LocalStack). The
// table must end with fewer data files and every row once. The S3 rule
// fires on the table's metadata files while the test is still writing
// them, so the planner may pin a snapshot before the test's deletes are
// committed; the committer then rebases those deletes onto the new files
// and they stay (seen: 12 data files and 4 delete files became 2 and 4,
// "rebased deletes committed during the job"). Otherwise no delete file is
// left.
func (l *ls) checkPipeline(t *testing.T, tpl *template, glue *gluestandin.Server, glueURL string) {
	ctx := context.Background()
	// The test's own catalog connection reaches LocalStack's S3 through
	// the SDK's standard configuration, as the functions do.
	t.Setenv("AWS_ENDPOINT_URL", l.endpoint)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_REGION", region)
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalogs.Open(ctx, catalogs.Config{Type: "glue", Name: "default", Warehouse: "s3://warehouse",
		Properties: map[string]string{"glue.endpoint": glueURL, "glue.region": region, "s3.endpoint": l.endpoint, "s3.region": region}}, awsCfg)
	if err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{"demo", "orders"}
	tbl, err := sampletable.Create(ctx, cat, ident, sampletable.Options{FormatVersion: 2, Partitions: 2, Files: 6, RowsPerFile: 100,
		PositionDeletes: true, EqualityDeletes: true, Properties: map[string]string{optin.PropertyEnabled: "true"}})
	if err != nil {
		t.Fatalf("create the table: %v", err)
	}
	want, err := fingerprint.Table(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	before, err := health.Measure(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("demo.orders at %s: %d data files, %d delete files, %d rows", tbl.Location(), before.DataFiles, before.DeleteFiles(), want.Rows)

	detail, _ := json.Marshal(map[string]any{"namespace": "demo", "table": "orders"})
	out, err := l.clients().Events.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{{
		Source: aws.String("icekeeper"), DetailType: aws.String("Iceberg Table Committed"), Detail: aws.String(string(detail))}}})
	if err != nil || out.FailedEntryCount != 0 {
		t.Fatalf("put the commit event: %v %+v", err, out)
	}

	fns := map[string]string{}
	for _, id := range tpl.ofType("AWS::Lambda::Function") {
		fns[strings.ToLower(id[:len(id)-8])] = tpl.physical[id]
	}
	deadline := time.Now().Add(4 * time.Minute)
	var after health.Stats
	for {
		cur, err := cat.LoadTable(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		if after, err = health.Measure(ctx, cur); err != nil {
			t.Fatal(err)
		}
		// The writer only adds files: fewer means icekeeper's commit.
		if after.DataFiles < before.DataFiles {
			got, err := fingerprint.Table(ctx, cur)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("rows changed by the compaction: %+v, want %+v", got, want)
			}
			snap := cur.CurrentSnapshot()
			t.Logf("committed by the stack's committer through Glue (UpdateTable calls %d): snapshot %d (%s), %d -> %d data files, %d -> %d delete files, %d rows unchanged",
				glue.Calls("UpdateTable"), snap.SnapshotID, snap.Summary.Operation, before.DataFiles, after.DataFiles, before.DeleteFiles(), after.DeleteFiles(), got.Rows)
			if after.DeleteFiles() > 0 && !strings.Contains(l.functionLogs(t, fns["committer"]), "rebased deletes committed during the job") {
				t.Errorf("%d delete files left, and the committer rebased none", after.DeleteFiles())
			}
			break
		}
		if time.Now().After(deadline) {
			for name, fn := range fns {
				t.Logf("%s logged:\n%s", name, l.functionLogs(t, fn))
			}
			t.Fatalf("no compaction within 4 min: %d data files", after.DataFiles)
		}
		time.Sleep(2 * time.Second)
	}
	for name, fn := range fns {
		logs := l.functionLogs(t, fn)
		t.Logf("%s: %d invocations", name, strings.Count(logs, "REPORT RequestId"))
	}
}
