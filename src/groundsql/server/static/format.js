// What kind of values a result column holds, and how a value is shown. The API sends rows as
// JSON: numbers as numbers, dates as ISO text, NULL as null.

const ISO_DATE = /^\d{4}-\d{2}(-\d{2})?([ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;
const YEAR_NAME = /year/i;
// Keys and years are numbers a person reads as names: "2,014" or "1,204,311" would mislead.
const PLAIN_NAME = /(^|_)(id|code|year)$|year/i;

const grouped = new Intl.NumberFormat(undefined, { maximumFractionDigits: 4 });

export function columnValues(rows, index) {
  return rows.map((row) => row[index]).filter((value) => value !== null && value !== undefined);
}

export function isNumberColumn(rows, index) {
  const values = columnValues(rows, index);
  return values.length > 0 && values.every((v) => typeof v === "number");
}

function isYear(value) {
  const year = typeof value === "string" && /^\d{4}$/.test(value) ? Number(value) : value;
  return Number.isInteger(year) && year >= 1000 && year <= 2999;
}

// A column of dates or times (ISO text), or of years in a column named for years.
export function isTimeColumn(name, rows, index) {
  const values = columnValues(rows, index);
  if (values.length === 0) return false;
  if (values.every((v) => typeof v === "string" && ISO_DATE.test(v))) return true;
  return YEAR_NAME.test(name) && values.every(isYear);
}

// A time value as a number to place on an axis.
export function timeOf(value) {
  return isYear(value) ? Date.UTC(Number(value), 0, 1) : Date.parse(value);
}

export function formatCell(name, value) {
  if (value === null || value === undefined) return "NULL";
  if (typeof value === "number") return PLAIN_NAME.test(name) ? String(value) : grouped.format(value);
  if (typeof value === "boolean") return value ? "true" : "false";
  return String(value);
}

export function formatNumber(value) {
  return grouped.format(value);
}

export function plural(count, one, many = `${one}s`) {
  return `${formatNumber(count)} ${count === 1 ? one : many}`;
}
