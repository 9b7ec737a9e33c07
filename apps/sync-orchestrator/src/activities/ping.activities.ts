/** The smallest activity: proves the worker runs activities and the workflow gets their result. */
export async function greet(name: string): Promise<string> {
  return `Hello, ${name}!`;
}
