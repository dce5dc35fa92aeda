// Command planner is the planner Lambda function: EventBridge events in,
// health reports and compaction jobs out. It only wires configuration and
// clients; see packages trigger and plan for what it does.
package main

import (
	"context"

	"github.com/apache/iceberg-go/catalog"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/handler"
	"github.com/icekeeper/icekeeper/shared/lambdamain"
	"github.com/icekeeper/icekeeper/shared/stages"
)

func main() {
	ctx := context.Background()
	deps, log := lambdamain.Init(ctx, "planner", func(c config.Config) []config.Need { return stages.PlannerNeedsFor(c.Mode) })
	var cat catalog.Catalog
	if deps.Config.Mode != config.ModeOff {
		var err error
		if cat, err = stages.OpenCatalog(ctx, deps.Config, deps.Clients); err != nil {
			lambdamain.Fail(log, "catalog", err)
		}
	}
	d, err := deps.Dispatcher(cat)
	if err != nil {
		lambdamain.Fail(log, "dispatcher", err)
	}
	lambda.Start(handler.Planner{Dispatch: d, Metrics: deps.Metrics, Log: log}.Handle)
}
