// Command infra is icekeeper's AWS CDK app: it reads the deployment's
// settings from settings.json (DefaultSettingsFile; `cdk -c key=value`
// overrides one for one run), prints what the deployment may do, and
// synthesizes one IcekeeperStack. cdk.json holds only the CDK's own
// settings (the recommended feature flags). See infra/README.md for the
// settings, the IAM model and how to deploy.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

func main() {
	defer jsii.Close()
	path := DefaultSettingsFile
	if p := os.Getenv(SettingsFileEnv); p != "" {
		path = p
	}
	file, err := readSettingsFile(path)
	if err != nil {
		fail(err)
	}
	app := awscdk.NewApp(&awscdk.AppProps{Context: &file})
	settings, err := SettingsFromContext(app.Node())
	if err != nil {
		fail(err)
	}
	fmt.Fprint(os.Stderr, settings.Summary())
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
	asm := app.Synth(nil)
	// What the template asks of AWS's quotas (make preview shows it).
	if err := printLimits(os.Stderr, *asm.GetStackByName(jsii.String(name)).TemplateFullPath()); err != nil {
		fail(err)
	}
}

// printLimits prints the synthesized template's sizes against AWS's
// limits (CheckLimits) and fails when one is over.
func printLimits(w io.Writer, templatePath string) error {
	raw, err := os.ReadFile(templatePath)
	if err != nil {
		return fmt.Errorf("read the synthesized template: %w", err)
	}
	var tpl map[string]any
	if err := json.Unmarshal(raw, &tpl); err != nil {
		return fmt.Errorf("decode the synthesized template: %w", err)
	}
	fmt.Fprintln(w, "  AWS limits (deploy-time names and ARNs counted at their longest):")
	over := 0
	for _, c := range append(CheckLimits(tpl, raw), DirectTemplateCheck(raw)) {
		fmt.Fprintf(w, "    %s\n", c)
		if !c.OK() && c.Limit != TemplateDirectLimit {
			over++
		}
	}
	if over > 0 {
		return fmt.Errorf("%w: %d of AWS's limits exceeded (above); see infra/README.md, \"Scale\"", ErrSettings, over)
	}
	return nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	jsii.Close()
	os.Exit(1)
}
