// Command committer is the committer Lambda function: commit requests in,
// one atomic Iceberg commit (or a clean abort) per job out. It works only in
// mode active. It only wires configuration and clients; see package commit.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/icekeeper/icekeeper/shared/catalogs"
	"github.com/icekeeper/icekeeper/shared/stage"
	"github.com/icekeeper/icekeeper/shared/stage/committer"
)

func main() {
	ctx := context.Background()
	deps, log := stage.Init(ctx, "committer", stage.ActiveOnly(committer.Needs))
	stage.IdleUnlessActive(deps, log, "committer")
	cat, err := catalogs.OpenWithFile(ctx, deps.Config.Catalog, deps.Clients.Config)
	if err != nil {
		stage.Fail(log, "catalog", err)
	}
	c, err := committer.Committer(deps, cat)
	if err != nil {
		stage.Fail(log, "committer", err)
	}
	lambda.Start(committer.Handler{Commit: c, Log: log}.Handle)
}
