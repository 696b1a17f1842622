SELECT a.i, b.s FROM t a JOIN t b ON a.i = b.i LEFT JOIN t c USING (s) WHERE a.dt IN (SELECT dt FROM t WHERE b) AND NOT EXISTS (SELECT 1 FROM t x WHERE x.j = a.j + 1)
