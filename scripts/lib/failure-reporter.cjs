// A jest reporter that appends every failing test (suite, name, the first lines of its error) to the file
// named by SWITCHBOARD_TEST_FAILURES, so `npm test` can repeat them after turbo's interleaved output ends.
const fs = require('node:fs');
const path = require('node:path');

const FIRST_LINES = 12;

class FailureFileReporter {
  onTestResult(_test, result) {
    const file = process.env.SWITCHBOARD_TEST_FAILURES;
    if (!file) return;
    const suite = path.relative(process.cwd(), result.testFilePath);
    const lines = [];
    if (result.testExecError) lines.push(`✕ ${suite}: ${firstLines(result.testExecError.message)}`);
    for (const t of result.testResults) {
      if (t.status !== 'failed') continue;
      lines.push(`✕ ${suite} › ${t.ancestorTitles.concat(t.title).join(' › ')} (${t.duration ?? '?'} ms)`);
      for (const message of t.failureMessages) lines.push(indent(firstLines(message)));
    }
    if (lines.length > 0) fs.appendFileSync(file, `${lines.join('\n')}\n`);
  }
}

const plain = (s) => s.replace(/\u001b\[[0-9;]*m/g, '');
const firstLines = (s) => plain(String(s)).split('\n').slice(0, FIRST_LINES).join('\n');
const indent = (s) =>
  s
    .split('\n')
    .map((l) => `    ${l}`)
    .join('\n');

module.exports = FailureFileReporter;
