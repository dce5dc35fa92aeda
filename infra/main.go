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
	if v, ok := app.Node().TryGetContext(jsii.String("stackName")).(string); ok && v != "" {
		name = v
	}
	env := &awscdk.Environment{
		Account: jsii.String(os.Getenv("CDK_DEFAULT_ACCOUNT")),
		Region:  jsii.String(os.Getenv("CDK_DEFAULT_REGION")),
	}
	if *env.Account == "" && *env.Region == "" {
		env = nil // environment-agnostic: account and region resolve at deploy time
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
