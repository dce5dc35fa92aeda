// Command committer is the committer Lambda function: commit requests in,
// one atomic Iceberg commit (or a clean abort) per job out. It works only in
// mode active. It only wires configuration and clients; see package commit.
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
	deps, log := lambdamain.Init(ctx, "committer", lambdamain.ActiveOnly(stages.CommitterNeeds))
	lambdamain.IdleUnlessActive(deps, log, "committer")
	cat, err := stages.OpenCatalog(ctx, deps.Config, deps.Clients)
	if err != nil {
		lambdamain.Fail(log, "catalog", err)
	}
	c, err := deps.Committer(cat)
	if err != nil {
		lambdamain.Fail(log, "committer", err)
	}
	lambda.Start(handler.Committer{Commit: c, Log: log}.Handle)
}
