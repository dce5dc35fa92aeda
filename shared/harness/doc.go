// Package harness holds, in its subpackages, what runs icekeeper outside
// Lambda and checks it: never linked by a Lambda function (the isolation
// test in functions/ holds that).
//
//   - localcloud: the AWS APIs in-process (the kumo emulator) with the
//     pipeline's resources, for the demo, `icekeeper compact --local` and
//     the tests;
//   - localrun and stages: the three stages run in one process, draining
//     the queues;
//   - sampletable, churn and fingerprint: sample tables, a busy writer on
//     them, and the row oracle that checks nothing was lost;
//   - bench and s3requests: the benchmark (`make bench`) and its count of
//     S3 requests;
//   - bootstraps: the functions built as `make lambdas` builds them, for
//     the benchmark's cold starts and the tests under AWS's runtime
//     emulator;
//   - scheduled: EventBridge Scheduler's one-time schedules fired where
//     nothing fires them (the soak's and the tests' wake-ups);
//   - gluestandin: AWS Glue's Data Catalog calls with Glue's version lock,
//     where kumo (no UpdateTable) and LocalStack (no Glue) cannot serve
//     them.
package harness
