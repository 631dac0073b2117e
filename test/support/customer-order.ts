/**
 * The order of a customer list, written from its definition rather than from the data layer's
 * encoding: names and e-mail addresses by the code points of their lowercase form, nulls last in
 * both directions, criteria applied in the order given (a later value for a field already given
 * changes nothing), then ascending id.
 */
export interface OrderedCustomer {
  id: string;
  created_at: string;
  email: string | null;
  name: string | null;
}

export function customerOrder(sorting: readonly string[]) {
  const points = (text: string) => [...text.toLowerCase()].map((c) => c.codePointAt(0) ?? 0);
  const compareText = (a: string, b: string) => {
    const [x, y] = [points(a), points(b)];
    for (let i = 0; i < Math.min(x.length, y.length); i++)
      if (x[i] !== y[i]) return (x[i] ?? 0) - (y[i] ?? 0);
    return x.length - y.length;
  };
  const criteria: [keyof OrderedCustomer, boolean][] = [];
  for (const value of sorting) {
    const field = value.replace(/^-/, '') as keyof OrderedCustomer;
    if (!criteria.some(([known]) => known === field)) criteria.push([field, value.startsWith('-')]);
  }
  return (a: OrderedCustomer, b: OrderedCustomer): number => {
    for (const [field, descending] of criteria) {
      const [x, y] = [a[field], b[field]];
      let diff: number;
      if (x === null || y === null) diff = x === y ? 0 : x === null ? 1 : -1;
      else if (field === 'created_at') diff = Date.parse(x) - Date.parse(y);
      else diff = compareText(x, y);
      if (diff !== 0) return descending ? -diff : diff;
    }
    return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
  };
}
