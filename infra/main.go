package main

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
)

func main() {
	app := awscdk.NewApp(nil)
	st := awscdk.NewStack(app, jsii.String("S"), nil)
	awssqs.NewQueue(st, jsii.String("Q"), nil)
	t := assertions.Template_FromStack(st, nil)
	fmt.Println(*t.ToJSON())
}
