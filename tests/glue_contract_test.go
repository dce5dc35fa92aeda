package tests

import (
	"context"
	"errors"
	"fmt"
	"github.com/icekeeper/icekeeper/shared/harness/gluestandin"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/glue"
	gluetypes "github.com/aws/aws-sdk-go-v2/service/glue/types"
	"github.com/aws/smithy-go"

	"github.com/icekeeper/icekeeper/shared/harness/localcloud"
)

// glueContract is what icekeeper relies on of AWS Glue's Data Catalog
// (iceberg-go's glue catalog makes these calls), each with what the AWS
// Glue API reference documents (https://docs.aws.amazon.com/glue/latest/webapi/API_UpdateTable.html,
// API_GetTable.html, API_CreateTable.html, "Common errors"):
//
//   - GetTable answers a VersionId; UpdateTable with that VersionId
//     succeeds and gives the table a new one ("VersionId – The version ID
//     at which to update the table contents");
//   - UpdateTable with a VersionId that is no longer the table's fails
//     with ConcurrentModificationException: the optimistic lock Iceberg's
//     Glue commits rest on (Iceberg Java's GlueTableOperations and
//     iceberg-go's glue catalog send the VersionId they read);
//   - a missing table is EntityNotFoundException; creating an existing one
//     is AlreadyExistsException.
//
// The stand-in the end-to-end tests use (shared/harness/gluestandin) must keep all of it;
// moto's Glue (make moto-test) is held to it too, except where it is
// known not to (secondOpinionGaps), which the test asserts so that a moto
// that closes a gap is noticed.
func glueContract(t *testing.T, cl *glue.Client, gaps map[string]bool) {
	t.Helper()
	ctx := context.Background()
	db, name := fmt.Sprintf("contract_db_%d", time.Now().UnixNano()), "orders"
	code := func(err error) string {
		var api smithy.APIError
		if errors.As(err, &api) {
			return api.ErrorCode()
		}
		if err != nil {
			return err.Error()
		}
		return ""
	}
	if _, err := cl.CreateDatabase(ctx, &glue.CreateDatabaseInput{DatabaseInput: &gluetypes.DatabaseInput{Name: aws.String(db)}}); err != nil {
		t.Fatal(err)
	}
	input := func(loc string) *gluetypes.TableInput {
		return &gluetypes.TableInput{Name: aws.String(name), TableType: aws.String("EXTERNAL_TABLE"),
			Parameters: map[string]string{"table_type": "ICEBERG", "metadata_location": loc}}
	}
	if _, err := cl.CreateTable(ctx, &glue.CreateTableInput{DatabaseName: aws.String(db), TableInput: input("s3://w/t/metadata/1.metadata.json")}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.CreateTable(ctx, &glue.CreateTableInput{DatabaseName: aws.String(db), TableInput: input("s3://w/t/metadata/1.metadata.json")}); code(err) != "AlreadyExistsException" {
		t.Errorf("creating an existing table: %q, want AlreadyExistsException", code(err))
	}
	if _, err := cl.GetTable(ctx, &glue.GetTableInput{DatabaseName: aws.String(db), Name: aws.String("missing")}); code(err) != "EntityNotFoundException" {
		t.Errorf("a missing table: %q, want EntityNotFoundException", code(err))
	}
	got, err := cl.GetTable(ctx, &glue.GetTableInput{DatabaseName: aws.String(db), Name: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	read := aws.ToString(got.Table.VersionId)
	if read == "" {
		t.Fatal("GetTable answered no VersionId")
	}
	if _, err := cl.UpdateTable(ctx, &glue.UpdateTableInput{DatabaseName: aws.String(db), TableInput: input("s3://w/t/metadata/2.metadata.json"), VersionId: aws.String(read)}); err != nil {
		t.Fatalf("UpdateTable at the version read: %v", err)
	}
	after, err := cl.GetTable(ctx, &glue.GetTableInput{DatabaseName: aws.String(db), Name: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	if v := aws.ToString(after.Table.VersionId); v == read {
		t.Errorf("UpdateTable left the VersionId at %s", v)
	}
	if loc := after.Table.Parameters["metadata_location"]; loc != "s3://w/t/metadata/2.metadata.json" {
		t.Errorf("metadata_location %q after the update", loc)
	}
	// Another writer committed since `read`: the same base is stale.
	_, err = cl.UpdateTable(ctx, &glue.UpdateTableInput{DatabaseName: aws.String(db), TableInput: input("s3://w/t/metadata/3.metadata.json"), VersionId: aws.String(read)})
	stale := code(err) == "ConcurrentModificationException"
	switch {
	case gaps["stale VersionId"] && stale:
		t.Errorf("the emulator now refuses a stale VersionId: drop the gap from secondOpinionGaps")
	case !gaps["stale VersionId"] && !stale:
		t.Errorf("UpdateTable at a stale VersionId: %q, want ConcurrentModificationException", code(err))
	}
}

// secondOpinionGaps are what the second emulator (moto 5.2.1) is known not
// to do of glueContract: its UpdateTable ignores VersionId
// (moto/glue/models.py, GlueBackend.update_table stores a new version
// whatever the caller read). AWS's documented behaviour is the stand-in's.
var secondOpinionGaps = map[string]bool{"stale VersionId": true}

// TestGlue_TheStandInKeepsWhatIcekeeperReliesOnOfGlue: the Glue stand-in
// of the end-to-end tests keeps Glue's documented semantics, and so does
// the second emulator's Glue where it is running (make moto-test), but for
// its known gaps.
func TestGlue_TheStandInKeepsWhatIcekeeperReliesOnOfGlue(t *testing.T) {
	client := func(endpoint string) *glue.Client {
		return glue.NewFromConfig(aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
			Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	}
	t.Run("stand-in", func(t *testing.T) {
		_, url := gluestandin.ForTest(t)
		glueContract(t, client(url), nil)
	})
	t.Run("second emulator", func(t *testing.T) {
		url := os.Getenv(localcloud.SecondEmulatorEnv)
		if url == "" {
			t.Skipf("%s is not set (make moto-test sets it)", localcloud.SecondEmulatorEnv)
		}
		glueContract(t, client(url), secondOpinionGaps)
	})
}
