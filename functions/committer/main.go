// Command committer is the committer Lambda function: commit requests in,
// one atomic Iceberg commit (or a clean abort) per job out. It only wires
// configuration and clients; see package commit.
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
	deps, cat, log := lambdamain.InitWithCatalog(ctx, "committer", stages.CommitterNeeds...)
	c, err := deps.Committer(cat)
	if err != nil {
		lambdamain.Fail(log, "committer", err)
	}
	lambda.Start(handler.Committer{Commit: c, Log: log}.Handle)
}
