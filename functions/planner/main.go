// Command planner is the planner Lambda function: EventBridge events in,
// health reports and compaction jobs out. It only wires configuration and
// clients; see packages trigger and plan for what it does.
package main

import (
	"context"

	"github.com/apache/iceberg-go/catalog"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/icekeeper/icekeeper/shared/catalogs"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/stage"
	"github.com/icekeeper/icekeeper/shared/stage/planner"
)

func main() {
	ctx := context.Background()
	deps, log := stage.Init(ctx, "planner", func(c config.Config) []config.Need { return planner.NeedsFor(c.Mode) })
	var cat catalog.Catalog
	if deps.Config.Mode != config.ModeOff {
		var err error
		if cat, err = catalogs.OpenWithFile(ctx, deps.Config.Catalog, deps.Clients.Config); err != nil {
			stage.Fail(log, "catalog", err)
		}
	}
	d, err := planner.Dispatcher(deps, cat)
	if err != nil {
		stage.Fail(log, "dispatcher", err)
	}
	lambda.Start(planner.Handler{Dispatch: d, Metrics: deps.Metrics, Log: log}.Handle)
}
