// Command committer is the committer Lambda function: commit requests in,
// one atomic Iceberg commit (or a clean abort) per job out. It works only in
// mode active. It only wires configuration and clients; see package commit.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/icekeeper/icekeeper/shared/catalogs"
	"github.com/icekeeper/icekeeper/shared/handler/committer"
	"github.com/icekeeper/icekeeper/shared/lambdamain"
	"github.com/icekeeper/icekeeper/shared/wiring/committing"
)

func main() {
	ctx := context.Background()
	deps, log := lambdamain.Init(ctx, "committer", lambdamain.ActiveOnly(committing.Needs))
	lambdamain.IdleUnlessActive(deps, log, "committer")
	cat, err := catalogs.OpenWithFile(ctx, deps.Config.Catalog, deps.Clients.Config)
	if err != nil {
		lambdamain.Fail(log, "catalog", err)
	}
	c, err := committing.Committer(deps, cat)
	if err != nil {
		lambdamain.Fail(log, "committer", err)
	}
	lambda.Start(committer.Handler{Commit: c, Log: log}.Handle)
}
