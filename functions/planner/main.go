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
	deps, log := lambdamain.Init(ctx, "planner", stages.PlannerNeeds...)
	cat, err := stages.OpenCatalog(ctx, deps.Config, deps.Clients)
	if err != nil {
		lambdamain.Fail(log, "catalog", err)
	}
	p, err := deps.Planner(cat)
	if err != nil {
		lambdamain.Fail(log, "planner", err)
	}
	lambda.Start(handler.Planner{Plan: p, SweepTables: deps.Config.Tables, Log: log}.Handle)
}
