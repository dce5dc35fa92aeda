package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Queues are the task queue (planner to rewriters) and the commit queue
// (rewriters and planner to the committer), each with its dead-letter
// queue.
//
// A message moves to its dead-letter queue after MaxTaskAttempts receives,
// which is also ICEKEEPER_MAX_TASK_ATTEMPTS: the functions count the same
// deliveries the queue does, so a group fails its job on the last one. The
// visibility timeouts follow the consumers' timeouts (Settings.TaskVisibility
// and CommitVisibility).
//
// PlannerDLQ receives the planner's asynchronous invocations (EventBridge
// events) that failed every retry or grew too old, so a trigger is never
// lost silently.
type Queues struct {
	Tasks, TasksDLQ     awssqs.Queue
	Commits, CommitsDLQ awssqs.Queue
	PlannerDLQ          awssqs.Queue
}

// dlqRetention keeps dead letters for SQS's maximum, so there is time to
// look at them.
const dlqRetentionDays = 14

func newQueues(scope constructs.Construct, s Settings) Queues {
	dlq := func(id string) awssqs.Queue {
		return awssqs.NewQueue(scope, jsii.String(id), &awssqs.QueueProps{
			Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
			EnforceSSL:      jsii.Bool(true),
			RetentionPeriod: awscdk.Duration_Days(jsii.Number(dlqRetentionDays)),
		})
	}
	queue := func(id string, visibility awscdk.Duration, dead awssqs.Queue) awssqs.Queue {
		return awssqs.NewQueue(scope, jsii.String(id), &awssqs.QueueProps{
			Encryption:        awssqs.QueueEncryption_SQS_MANAGED,
			EnforceSSL:        jsii.Bool(true),
			VisibilityTimeout: visibility,
			RetentionPeriod:   awscdk.Duration_Days(jsii.Number(4)),
			DeadLetterQueue: &awssqs.DeadLetterQueue{
				Queue:           dead,
				MaxReceiveCount: jsii.Number(float64(s.MaxTaskAttempts)),
			},
		})
	}
	q := Queues{TasksDLQ: dlq("TasksDLQ"), CommitsDLQ: dlq("CommitsDLQ"), PlannerDLQ: dlq("PlannerDLQ")}
	q.Tasks = queue("Tasks", seconds(s.TaskVisibility()), q.TasksDLQ)
	q.Commits = queue("Commits", seconds(s.CommitVisibility()), q.CommitsDLQ)
	return q
}
