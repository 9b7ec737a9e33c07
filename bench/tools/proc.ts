import { readFileSync } from 'node:fs';

/**
 * CPU time (user + system) used so far by the process whose `/proc/<pid>/stat` text this is, in
 * microseconds (Linux, 100 ticks per second). The command name may hold spaces and parentheses, so the
 * fields are counted from the last `)`.
 */
export function cpuMicrosOfStat(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

/** CPU time (user + system) a process has used so far, in microseconds. */
export function cpuMicros(pid: number): number {
  return cpuMicrosOfStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
}

/**
 * CPU time all processes of the host have used so far (every core's user, nice, system, irq and softirq
 * time from `/proc/stat`), in microseconds: with the services' own CPU it says how busy the host was
 * with other work during a measurement.
 */
export function hostCpuMicros(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
  const [user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number);
  return (user! + nice! + system! + irq! + softirq! + (steal ?? 0)) * 10_000;
}
