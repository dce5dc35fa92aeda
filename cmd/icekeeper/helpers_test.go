package main

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/harness/localcloud"
	"github.com/icekeeper/icekeeper/shared/harness/stages"
	"github.com/icekeeper/icekeeper/shared/health"
	"github.com/icekeeper/icekeeper/shared/jobs"
)

func configAWS() aws.Config { return aws.Config{Region: "us-east-1"} }

func statsOf(dataFiles, deleteFiles int) health.Stats {
	return health.Stats{DataFiles: dataFiles, PositionDeleteFiles: deleteFiles}
}

// stagesJobs returns the only job in the test's jobs table.
func stagesJobs(t *testing.T, cfg config.Config, cloud *localcloud.Cloud) (jobs.Job, error) {
	t.Helper()
	deps, err := stages.NewDeps(cfg, cloud.Clients, slog.New(slog.NewJSONHandler(io.Discard, nil)), stages.AllNeeds...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := cloud.Clients.DynamoDB.Scan(context.Background(), scanInput(cfg.JobsTable))
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range out.Items {
		if v, ok := it["item_key"]; ok && attrString(v) == "job" {
			return deps.Jobs.Get(context.Background(), attrString(it["job_id"]))
		}
	}
	t.Fatal("no job recorded")
	return jobs.Job{}, nil
}

func scanInput(tableName string) *dynamodb.ScanInput {
	return &dynamodb.ScanInput{TableName: aws.String(tableName)}
}

func attrString(v types.AttributeValue) string {
	if s, ok := v.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}
