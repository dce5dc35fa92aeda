// Command rewriter is the rewriter Lambda function: one SQS task per file
// group in, Parquet files and a descriptor out. It never opens the catalog,
// and works only in mode active. It only wires configuration and clients;
// see package rewrite.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/icekeeper/icekeeper/shared/handler/rewriter"
	"github.com/icekeeper/icekeeper/shared/lambdamain"
	"github.com/icekeeper/icekeeper/shared/wiring/rewriting"
)

func main() {
	ctx := context.Background()
	deps, log := lambdamain.Init(ctx, "rewriter", lambdamain.ActiveOnly(rewriting.Needs))
	lambdamain.IdleUnlessActive(deps, log, "rewriter")
	r, err := rewriting.Rewriter(deps)
	if err != nil {
		lambdamain.Fail(log, "rewriter", err)
	}
	lambda.Start(rewriter.Handler{Rewrite: r, Delete: rewriting.Deleter(deps), List: rewriting.Lister(deps), Requeue: deps.Tasks, Log: log}.Handle)
}
