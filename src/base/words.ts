// Words for counts in messages and reports: "1 interrupt", "2 interrupts".

/** `count` and the noun it counts, singular for 1: counted(1, 'engine') = "1 engine", counted(3, 'engine') = "3 engines". */
export const counted = (count: number | bigint, one: string, many = `${one}s`): string => `${count} ${count === 1 || count === 1n ? one : many}`;
