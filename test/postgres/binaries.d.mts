export function postgresBinary(name: string): string;
export function postgresCommand(name: string, args: string[]): [string, string[]];
