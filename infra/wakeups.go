package main

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsscheduler"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// WakeUps are what the planner's expiry wake-ups need (shared/wakeup): the
// EventBridge Scheduler schedule group the planner creates them in, and
// the role the scheduler assumes to put their events on icekeeper's bus,
// where the ContinueEvents rule hands them to the planner (the visits at a
// cooldown's end are commit events: the CommitEvents rule). Made in mode
// active with expiryWakeUps on (the default).
//
// Each schedule deletes itself once it fired (ActionAfterCompletion
// DELETE); deleting the group, with the stack, deletes every schedule
// still in it ("Deleting a schedule group results in EventBridge Scheduler
// deleting all schedules associated with the group", EventBridge
// Scheduler API Reference, DeleteScheduleGroup).
type WakeUps struct {
	Group awsscheduler.CfnScheduleGroup
	Role  awsiam.Role
	// BusARN is the bus the schedules target.
	BusARN string
}

// newWakeUps makes the group and the scheduler's role, or nothing (nil)
// when the settings leave the wake-ups off.
func newWakeUps(stack awscdk.Stack, scope constructs.Construct, s Settings) *WakeUps {
	if s.Mode != ModeActive || !s.ExpiryWakeUps {
		return nil
	}
	bus := eventBusARN(stack, s.EventBus)
	w := &WakeUps{BusARN: bus}
	w.Group = awsscheduler.NewCfnScheduleGroup(scope, jsii.String("ExpiryWakeUps"), &awsscheduler.CfnScheduleGroupProps{})
	// The scheduler's execution role, trusted by EventBridge Scheduler for
	// this account's schedules only (the confused-deputy condition of
	// "Set up the execution role", EventBridge Scheduler User Guide), may
	// only put events on the bus.
	w.Role = awsiam.NewRole(scope, jsii.String("ExpiryWakeUpsRole"), &awsiam.RoleProps{
		Description: jsii.String("icekeeper: EventBridge Scheduler puts the planner's expiry wake-ups on icekeeper's bus"),
		AssumedBy: awsiam.NewServicePrincipal(jsii.String("scheduler.amazonaws.com"), &awsiam.ServicePrincipalOpts{
			Conditions: &map[string]any{"StringEquals": map[string]any{"aws:SourceAccount": stack.Account()}},
		}),
	})
	w.Role.AddToPolicy(statement("WakeUpEvents", []string{"events:PutEvents"}, []string{bus}))
	return w
}

// grant lets the planner create schedules in the group, and hand the
// scheduler its role and no other.
func (w *WakeUps) grant(stack awscdk.Stack, fns Lambdas) {
	if w == nil {
		return
	}
	schedules := fmt.Sprintf("arn:%s:scheduler:%s:%s:schedule/%s/*", *stack.Partition(), *stack.Region(), *stack.Account(), *w.Group.Ref())
	pass := statement("WakeUpsRolePass", []string{"iam:PassRole"}, []string{*w.Role.RoleArn()})
	pass.AddCondition(jsii.String("StringEquals"), map[string]any{"iam:PassedToService": "scheduler.amazonaws.com"})
	add(fns.Planner, statement("WakeUpsCreate", []string{"scheduler:CreateSchedule"}, []string{schedules}), pass)
}

// names are the planner's wake-up settings (envvars.WakeUp*), empty when
// off.
func (w *WakeUps) names() (group, role, bus string) {
	if w == nil {
		return "", "", ""
	}
	return *w.Group.Ref(), *w.Role.RoleArn(), w.BusARN
}
