// Command planner is the planner Lambda function: EventBridge events in,
// compaction jobs out. It only wires configuration and clients; see package
// plan for what it does.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/icekeeper/icekeeper/shared/handler"
	"github.com/icekeeper/icekeeper/shared/lambdamain"
	"github.com/icekeeper/icekeeper/shared/stages"
)

func main() {
	ctx := context.Background()
	deps, cat, log := lambdamain.InitWithCatalog(ctx, "planner", stages.PlannerNeeds...)
	p, err := deps.Planner(cat)
	if err != nil {
		lambdamain.Fail(log, "planner", err)
	}
	lambda.Start(handler.Planner{Plan: p, SweepTables: deps.Config.Tables, Log: log}.Handle)
}
