declare module 'swagger-ui-dist' {
  /** Folder holding swagger-ui's built assets. */
  export function getAbsoluteFSPath(): string;
}
