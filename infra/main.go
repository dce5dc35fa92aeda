// Command infra is icekeeper's AWS CDK app: it reads the deployment's
// settings from the CDK context (cdk.json, `cdk -c key=value`) and
// synthesizes one IcekeeperStack. See infra/README.md for the settings, the
// IAM model and how to deploy.
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

func main() {
	defer jsii.Close()
	app := awscdk.NewApp(nil)
	settings, err := SettingsFromContext(app.Node())
	if err != nil {
		fail(err)
	}
	name := "Icekeeper"
	if v, ok := app.Node().TryGetContext(jsii.String(CtxStackName)).(string); ok && v != "" {
		name = v
	}
	// The CLI's account and region when it knows both; otherwise the stack
	// is environment-agnostic and they resolve at deploy time.
	var env *awscdk.Environment
	if account, region := os.Getenv("CDK_DEFAULT_ACCOUNT"), os.Getenv("CDK_DEFAULT_REGION"); account != "" && region != "" {
		env = &awscdk.Environment{Account: jsii.String(account), Region: jsii.String(region)}
	}
	if _, err := NewIcekeeperStack(app, name, &IcekeeperStackProps{
		StackProps: awscdk.StackProps{Env: env},
		Settings:   settings,
	}); err != nil {
		fail(err)
	}
	app.Synth(nil)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	jsii.Close()
	os.Exit(1)
}
